"""Offline scoring beyond one process: deterministic shards (`--shard I/N`) and a Ray backend (`--ray`).

Both keep a task's rollouts together (by a stable hash of the task id): a shard or an actor then
writes each task's rubric once in its own stage cache. Both reuse the local loop's per-row
function (`verifier.sources.items.score_one`) and its durable, resumable result log.
"""
