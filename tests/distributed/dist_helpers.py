"""Sources for the distributed-scoring tests: native JSONL of G rollouts per task."""
from __future__ import annotations

from pathlib import Path

from serving.reward_service.loadtest import trajectory


def write_source(path: Path, *, tasks: int, per_task: int) -> Path:
    """`tasks * per_task` distinct rollouts, interleaved by task (so a task's rows are not adjacent)."""
    lines = [trajectory(k, f"task-{k % tasks}").to_json() for k in range(tasks * per_task)]
    path.write_text("\n".join(lines) + "\n")
    return path


def judge_settings(url: str) -> dict:
    return {"base_urls": [url], "model": "echo", "backoff_initial_s": 0.05, "backoff_jitter_s": 0.05}
