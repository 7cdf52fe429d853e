"""/health and /metrics for a Ray Serve deployment as a whole, not for whichever replica answers.

Why a board: a request to /metrics reaches one replica (the router sends unkeyed requests to the
least loaded one), and Ray Serve gives a replica no way to ask its peers. So every replica writes
its own snapshot (its /health fields and its Prometheus text) to Ray's key-value store in the GCS
every `PERIOD_S`, and the replica that answers reads its peers' snapshots there: counters summed
over replicas, and how many replicas report versus how many the controller runs.

A snapshot older than `FRESH_S` is not counted (its replica is gone or stuck); a replica that stops
deletes its own. Sums of peers' figures may be up to `PERIOD_S` old; the answering replica's own are
current. When a replica goes, its counters leave the sums (Prometheus reads that as a counter reset).

The board also carries the drain before a shutdown (`request_drain`, `wait_drained`): Ray Serve,
once asked to delete a deployment, holds new requests for stopping replicas and then answers 404,
and kills a request still running at its timeout (500). So `serve-reward` first asks every replica
to drain as one process does (new work: 503 + Retry-After; running work: finished within
`--grace-s`, else answered as aborted), waits until all say they are drained, and only then deletes.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)
NAMESPACE = "cua-reward"
PERIOD_S = 1.0
FRESH_S = 5.0
# /health fields added over replicas (high-water marks: an upper bound of the deployment's)
SUMMED = ("queue_depth", "queue_capacity", "queue_high_water", "bytes_in_flight", "bytes_capacity",
          "bytes_high_water", "pipeline_runs")


class _Summed(Collector):
    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        yield from self.metrics


def sum_exposition(texts: list[str], extra: Sequence[Metric] = ()) -> bytes:
    """The Prometheus text of several replicas as one: samples with equal name and labels added
    (counters, histogram buckets, gauges such as queue depth and capacity; a high-water mark becomes
    an upper bound). `_created` timestamps are dropped: they do not add up."""
    families: dict[str, Metric] = {}
    values: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for text in texts:
        for fam in text_string_to_metric_families(text):
            out = families.setdefault(fam.name, Metric(fam.name, fam.documentation, fam.type))
            acc = values.setdefault(out.name, {})
            for s in fam.samples:
                if not s.name.endswith("_created"):
                    key = (s.name, tuple(sorted(s.labels.items())))
                    acc[key] = acc.get(key, 0.0) + s.value
    for name, fam in families.items():
        for (sample, labels), value in values[name].items():
            fam.add_sample(sample, dict(labels), value)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Summed([*families.values(), *extra]))
    return generate_latest(registry)


def replicas_gauge(ready: int, total: int | None) -> Metric:
    g = Metric("cua_reward_replicas", "replicas of the deployment: reporting, run by Ray Serve", "gauge")
    g.add_sample("cua_reward_replicas", {"state": "reporting"}, ready)
    if total is not None:
        g.add_sample("cua_reward_replicas", {"state": "total"}, total)
    return g


def drain_key(app: str, deployment: str) -> str:
    return f"{app}/{deployment}:drain"  # outside the snapshots' prefix


def snapshots(app: str, deployment: str) -> list[dict[str, Any]]:
    """The fresh snapshots of a deployment's replicas (any process connected to the cluster)."""
    from ray.experimental.internal_kv import _internal_kv_get, _internal_kv_list

    out, now = [], time.time()
    for key in _internal_kv_list(f"{app}/{deployment}/", namespace=NAMESPACE):
        raw = _internal_kv_get(key, namespace=NAMESPACE)
        snap = json.loads(raw) if raw else None
        if snap and now - snap.get("t", 0) <= FRESH_S:
            out.append(snap)
    return out


def request_drain(app: str, deployment: str, *, on: bool = True) -> None:
    """Ask every replica of the deployment to drain (`on=False`: clear a request left over)."""
    from ray.experimental.internal_kv import _internal_kv_del, _internal_kv_put

    if on:
        _internal_kv_put(drain_key(app, deployment), b"1", namespace=NAMESPACE)
    else:
        _internal_kv_del(drain_key(app, deployment), namespace=NAMESPACE)


def wait_drained(app: str, deployment: str, timeout_s: float) -> bool:
    """Until every replica that reports says it is drained (False: not within `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        snaps = snapshots(app, deployment)
        if all(s.get("drained") for s in snaps):
            return True
        time.sleep(0.2)
    return False


class Board:
    """One replica's side of the board (see the module docstring)."""

    def __init__(self, app: str, deployment: str, replica: str, snapshot: Callable[[], dict[str, Any]],
                 on_drain: Callable[[], Awaitable[None]] | None = None) -> None:
        self.app, self.deployment, self.replica, self.snapshot = app, deployment, replica, snapshot
        self.prefix, self.on_drain = f"{app}/{deployment}/", on_drain
        self.drain: asyncio.Task | None = None
        self.drained = False
        self._task: asyncio.Task | None = None
        self._view: tuple[float, tuple[list[dict[str, Any]], int | None]] | None = None
        self._view_lock = asyncio.Lock()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._publish_forever())

    async def _publish_forever(self) -> None:
        while True:
            try:
                if await asyncio.to_thread(self.publish) and self.drain is None and self.on_drain:
                    self.drain = asyncio.get_running_loop().create_task(self._drain(self.on_drain))
            except Exception as exc:  # noqa: BLE001 - the GCS may be briefly away; the next round writes again
                log.debug("snapshot not written: %s", exc)
            await asyncio.sleep(PERIOD_S)

    async def _drain(self, on_drain: Callable[[], Awaitable[None]]) -> None:
        await on_drain()
        self.drained = True
        await asyncio.to_thread(self.publish)

    def publish(self) -> bool:
        """Write this replica's snapshot; True when the deployment is asked to drain."""
        from ray.experimental.internal_kv import _internal_kv_exists, _internal_kv_put

        value = json.dumps({"t": time.time(), "drained": self.drained, **self.snapshot()})
        _internal_kv_put(self.prefix + self.replica, value, namespace=NAMESPACE)
        return bool(_internal_kv_exists(drain_key(self.app, self.deployment), namespace=NAMESPACE))

    def peers(self) -> list[dict[str, Any]]:
        """Fresh snapshots of every replica but this one."""
        return [s for s in snapshots(self.app, self.deployment) if s.get("health", {}).get("replica") != self.replica]

    def total(self) -> int | None:
        """Replicas Ray Serve runs for the deployment (starting, running, stopping), or None."""
        from ray import serve

        try:
            app = serve.status().applications[self.app]
            return sum(app.deployments[self.deployment].replica_states.values())
        except Exception:  # noqa: BLE001 - the controller's view is extra information only
            return None

    async def view(self) -> tuple[list[dict[str, Any]], int | None]:
        """Peers' snapshots and the controller's count, read at most once per `PERIOD_S` (/health is
        open: a flood of it must not become a flood of GCS and controller calls)."""
        async with self._view_lock:
            if self._view is None or time.monotonic() - self._view[0] >= PERIOD_S:
                self._view = (time.monotonic(), await asyncio.to_thread(lambda: (self.peers(), self.total())))
            return self._view[1]

    async def health(self, own: dict[str, Any]) -> dict[str, Any]:
        """This replica's /health fields, with the deployment's sums and replica counts."""
        peers, total = await self.view()
        snaps = [own, *(p["health"] for p in peers)]
        summed = {k: sum(s.get(k, 0) for s in snaps) for k in SUMMED}
        ready = sum(1 for s in snaps if s.get("status") == "ok")
        status = own["status"] if own["status"] != "ok" else ("ok" if total in (None, ready) else "degraded")
        return {**own, **summed, "status": status,
                "replicas": {"reporting": len(snaps), "ready": ready, "total": total}}

    async def metrics(self, own: bytes) -> bytes:
        peers, total = await self.view()
        return sum_exposition([own.decode(), *(p["metrics"] for p in peers)],
                              [replicas_gauge(1 + len(peers), total)])

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        from ray.experimental.internal_kv import _internal_kv_del

        try:
            await asyncio.to_thread(_internal_kv_del, self.prefix + self.replica, namespace=NAMESPACE)
        except Exception as exc:  # noqa: BLE001 - a stale snapshot ages out after FRESH_S anyway
            log.debug("snapshot not deleted: %s", exc)
