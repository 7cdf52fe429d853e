"""Prometheus metrics of the reward service (one registry per service, so tests can run several).

Requests and latency per endpoint and status; judge calls per stage (counted at the judge client,
so failed verifications count too); stage-cache hits and misses (rubric and relevance rows reused
across ranks); verifications run; unscored rollouts by error type; queue depth, capacity and
rejections; the waits at each bound and the process's CPU time, which together say what limits a
load (`verifier.waits`; docs/scaling-serve.md, "What bounds one process").
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class ServiceMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("cua_reward_requests", "HTTP requests", ["endpoint", "status"], registry=r)
        self.latency = Histogram("cua_reward_request_latency_seconds", "request latency", ["endpoint"],
                                 buckets=LATENCY_BUCKETS, registry=r)
        self.judge_calls = Counter("cua_reward_judge_calls", "judge calls started", ["stage"], registry=r)
        self.judge_seconds = Counter("cua_reward_judge_seconds", "time in judge calls, waits for a connection "
                                     "and retries included", ["stage"], registry=r)
        self.verifications = Counter("cua_reward_verifications", "rollouts answered", ["status"], registry=r)
        self.unscored = Counter("cua_reward_unscored", "unscored rollouts", ["reason"], registry=r)
        self.rejected = Counter("cua_reward_rejected", "requests refused before work", ["reason"], registry=r)

    def watch(self, service: Any) -> None:
        """Export live values read from the service at scrape time (queue, caches, runs)."""
        self.registry.register(_Live(service))


class _Live(Collector):
    def __init__(self, service: Any) -> None:
        self.service = service

    def collect(self) -> Iterator[Any]:
        s = self.service
        q = s.queue
        for name, doc, value in (("cua_reward_queue_depth", "trajectories admitted", q.depth),
                                 ("cua_reward_queue_capacity", "admission bound", q.capacity),
                                 ("cua_reward_queue_high_water", "most trajectories admitted at once",
                                  q.high_water),
                                 ("cua_reward_bytes_in_flight", "request bytes held", s.budget.in_flight),
                                 ("cua_reward_bytes_capacity", "admission bound in bytes", s.budget.capacity),
                                 ("cua_reward_bytes_waiting", "requests waiting for bytes", s.budget.waiting)):
            g = GaugeMetricFamily(name, doc)
            g.add_metric([], value)
            yield g
        cache = s.session.cache
        for name, doc, value in (("cua_reward_stage_cache_hits", "stage cache hits (rubric, relevance)",
                                  getattr(cache, "hits", 0)),
                                 ("cua_reward_stage_cache_misses", "stage cache misses",
                                  getattr(cache, "misses", 0)),
                                 ("cua_reward_pipeline_runs", "verifications actually run", s.session.runs)):
            c = CounterMetricFamily(name, doc)
            c.add_metric([], value)
            yield c
        yield from _waits({"bytes": s.budget.waits, **s.session.waits()})
        yield CounterMetricFamily("cua_reward_cpu_seconds", "CPU time of this process (a replica: its own); "
                                  "a rate near 1 per process: bound by its core", value=time.process_time())


def _waits(waits: dict[str, Any]) -> Iterator[Any]:
    count = CounterMetricFamily("cua_reward_waits", "times a bound was found full: bytes (--max-inflight-mb, "
                                "per request), slots (rollouts at once, per rollout), judge (connections, per "
                                "HTTP attempt, retries included)", labels=["bound"])
    seconds = CounterMetricFamily("cua_reward_wait_seconds", "time spent waiting at each bound", labels=["bound"])
    for bound, w in waits.items():
        count.add_metric([bound], w.count)
        seconds.add_metric([bound], w.seconds)
    yield count
    yield seconds


class CountingJudge:
    """Wraps a judge and counts every `complete` call per stage, and the time they took."""

    def __init__(self, inner: Any, counter: Counter, seconds: Counter | None = None) -> None:
        self.inner, self.counter, self.seconds = inner, counter, seconds

    async def complete(self, messages: Any, output_model: Any, *, stage: str, sampling: Any = None) -> Any:
        self.counter.labels(stage=stage).inc()
        start = time.perf_counter()
        try:
            return await self.inner.complete(messages, output_model, stage=stage, sampling=sampling)
        finally:
            if self.seconds is not None:
                self.seconds.labels(stage=stage).inc(time.perf_counter() - start)

    async def aclose(self) -> None:
        if hasattr(self.inner, "aclose"):
            await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
