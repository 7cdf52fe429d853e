"""Task affinity for the reward service on Ray Serve: every rollout of one task goes to one replica.

Why: a replica's `VerifierSession` writes a task's rubric once for every rollout that reaches it.
Ray Serve's default router (power of two choices) spreads a group's rollouts over replicas, and each
replica would then write its own rubric: N rubric calls per group instead of one.

`TaskAffinityRouter` is a Ray Serve request router (`RequestRouterConfig.request_router_class`). It
reads the routing key from the request's session id, which the proxy fills from the session header
(`x-session-id` by default); the proxy-side gate (`serve_gate`) writes the task id there. The owner
is the only candidate: when it is full the router waits for it (backs off) rather than split the
group; a replica's own admission answers 429 + Retry-After first (`max_ongoing_requests` is set
above it). Requests without a key (/health, /metrics) go to the least loaded replica.

Where a key goes (`Placement`): replicas are ranked for it by rendezvous hashing (highest sha256 of
key + replica id), and a key seen for the first time goes to the first in that ranking that holds
fewer than its even share of the keys in use (with a request in flight); once placed it stays
there while it is remembered (a request within `ttl_s`) and its replica is up. Why not the hash alone: with the few tasks of one
GRPO step per replica, hashing is lumpy (8 tasks on 2 replicas split 2/6, and the busy replica set
the pace: 0.78x of one process here); placed by share they split 4/4. The ranking keeps moves to
the keys of a replica that comes or goes. The placements live in each proxy's router: with one
address in front (a local deployment, or clients that use the head node's), every rollout of a
task meets the same router; a load balancer that spreads one group over several proxies would need
the hash alone (`Placement(even=False)`).
"""
from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from ray.serve.request_router import PendingRequest, RequestRouter, RunningReplica


def ranking(key: str, replica_ids: list[str]) -> list[str]:
    """The replica ids, best first, for `key`: rendezvous hashing (highest sha256 of key + id)."""
    return sorted(replica_ids, key=lambda r: hashlib.sha256(f"{key}\x00{r}".encode()).digest(), reverse=True)


def owner_index(key: str, replica_ids: list[str]) -> int:
    """Index of the replica that owns `key` by the hash alone (the first of its `ranking`)."""
    return replica_ids.index(ranking(key, replica_ids)[0])


class Placement:
    """Task key -> replica id: the rendezvous ranking, each new key on the first replica under its
    even share of the keys in use (see the module docstring). Pure and clock-driven: testable
    without a cluster. `place(..., request_id)` and `finished` (the router's choice and its
    completion hook) say which keys are in use."""

    def __init__(self, *, ttl_s: float = 900.0, even: bool = True, max_keys: int = 100_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s, self.even, self.max_keys, self.clock = ttl_s, even, max_keys, clock
        self._held: dict[str, tuple[str, float]] = {}  # key -> (replica id, last seen); oldest first
        self._flight: dict[str, str] = {}  # request id -> key, for requests routed and not finished
        self._busy: Counter[str] = Counter()  # key -> requests in flight

    def place(self, key: str, replica_ids: list[str], request_id: str | None = None) -> str:
        now = self.clock()
        self._forget(now)
        held = self._held.pop(key, None)
        if held is not None and held[0] in replica_ids:
            rid = held[0]
        else:
            ranked = ranking(key, replica_ids)
            rid = ranked[0]
            if self.even:
                live = set(replica_ids)
                counts = Counter(r for r, _ in (self._held[k] for k in self._busy if k in self._held) if r in live)
                share = math.ceil((sum(counts.values()) + 1) / len(replica_ids))
                rid = next(r for r in ranked if counts[r] < share)
        self._held[key] = (rid, now)  # re-inserted: the dict stays ordered by last use
        if request_id is not None and request_id not in self._flight:  # a request is chosen for again on backoff
            self._flight[request_id] = key
            self._busy[key] += 1
        return rid

    def finished(self, request_id: str) -> None:
        key = self._flight.pop(request_id, None)
        if key is not None:
            self._busy[key] -= 1
            if self._busy[key] <= 0:
                del self._busy[key]

    def _forget(self, now: float) -> None:
        """Drop keys unused for `ttl_s` (and the oldest beyond `max_keys`); requests never reported
        finished beyond `max_keys` too."""
        while self._held:
            key, (_, seen) = next(iter(self._held.items()))
            if now - seen <= self.ttl_s and len(self._held) <= self.max_keys:
                break
            del self._held[key]
        while len(self._flight) > self.max_keys:
            self.finished(next(iter(self._flight)))


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
        placement = getattr(self, "placement", None)
        if placement is None:
            placement = self.placement = Placement()
        request_id = getattr(getattr(pending_request, "metadata", None), "internal_request_id", None)
        return [[candidate_replicas[ids.index(placement.place(key, ids, request_id))]]]

    def on_request_completed(self, replica_id: Any, internal_request_id: str) -> None:
        placement = getattr(self, "placement", None)
        if placement is not None:
            placement.finished(internal_request_id)
