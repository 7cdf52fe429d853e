"""Task affinity for the reward service on Ray Serve: every rollout of one task goes to one replica.

Why: a replica's `VerifierSession` writes a task's rubric once for every rollout that reaches it.
Ray Serve's default router (power of two choices) spreads a group's rollouts over replicas, and each
replica would then write its own rubric: N rubric calls per group instead of one.

`TaskAffinityRouter` is a Ray Serve request router (`RequestRouterConfig.request_router_class`). It
reads the routing key from the request's session id, which the proxy fills from the session header
(`x-session-id` by default); the proxy-side gate (`serve_gate`) writes the task id there. The owner
of a key is chosen by rendezvous hashing (highest sha256 of key + replica id): the same on every
proxy of a cluster, and only the keys of a replica that comes or goes move. The owner is the only
candidate: when it is full the router waits for it (backs off) rather than split the group; a
replica's own admission answers 429 + Retry-After first (`max_ongoing_requests` is set above it).
Requests without a key (/health, /metrics) go to the least loaded replica.
"""
from __future__ import annotations

import hashlib

from ray.serve.request_router import PendingRequest, RequestRouter, RunningReplica


def owner_index(key: str, replica_ids: list[str]) -> int:
    """Index of the replica (by its stable id) that owns `key`: rendezvous hashing."""
    def weight(rid: str) -> bytes:
        return hashlib.sha256(f"{key}\x00{rid}".encode()).digest()

    return max(range(len(replica_ids)), key=lambda i: weight(replica_ids[i]))


def routing_key(pending_request: PendingRequest | None) -> str | None:
    if pending_request is None:
        return None
    return getattr(pending_request.metadata, "session_id", "") or None


class TaskAffinityRouter(RequestRouter):
    """One replica per task key (see the module docstring)."""

    async def choose_replicas(self, candidate_replicas: list[RunningReplica],
                              pending_request: PendingRequest | None = None) -> list[list[RunningReplica]]:
        key = routing_key(pending_request)
        if key is None or len(candidate_replicas) <= 1:
            return [candidate_replicas]
        if pending_request is not None:  # wait (with backoff) for the owner, never try another
            pending_request.routing_context.should_backoff = True
        ids = [r.replica_id.unique_id for r in candidate_replicas]
        return [[candidate_replicas[owner_index(key, ids)]]]
