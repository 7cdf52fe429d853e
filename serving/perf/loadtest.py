"""Load generator for the reward service, and the loopback judge it runs against.

`LoopbackJudge` is the schema-echo judge with injected latency and faults (503s the judge client
retries), counting replies per schema, so a test can say how many rubric calls reached it.
`run_load` sends N rollouts of T tasks at once through the real TRL client (`reward.remote`), which
retries the service's 429s after Retry-After, and returns the figures: answered, lost, 429s, p50 /
p95 latency, rubric calls. Used by tests/service/test_load.py and recipes/benchmark_service.py.
"""
from __future__ import annotations

import asyncio
import io
import random
import threading
import time
from collections import Counter
from typing import Any

from PIL import Image

from verifier.testing.echo_judge import EchoJudgeServer
from verifier.trajectory import Screenshot, Step, Task, Trajectory

RUBRIC_SCHEMA = "RubricDraft"  # the json_schema name of the rubric stage's reply


class LoopbackJudge(EchoJudgeServer):
    """The echo judge, counting requests per reply schema, with injected latency and faults."""

    def __init__(self, *, latency_s: float = 0.0, fault_rate: float = 0.0, seed: int = 0, **kw: Any) -> None:
        super().__init__(**kw)
        self.latency_s, self.fault_rate = latency_s, fault_rate
        self.by_schema: Counter[str] = Counter()
        self.faults = 0
        self._rng = random.Random(seed)
        self._count_lock = threading.Lock()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.latency_s:
            time.sleep(self.latency_s)
        with self._count_lock:
            fault = self._rng.random() < self.fault_rate
            if fault:
                self.faults += 1
            else:
                fmt = body.get("response_format") or {}
                self.by_schema[(fmt.get("json_schema") or {}).get("name", "?")] += 1
        if fault:
            return 503, {"error": {"message": "injected fault", "type": "server_error"}}
        return super().answer(path, body)

    @property
    def rubric_calls(self) -> int:
        return self.by_schema[RUBRIC_SCHEMA]


def png(color: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return buf.getvalue()


def trajectory(k: int, task: str = "task-a", *, shot: bytes | None = None) -> Trajectory:
    """A small distinct rollout of `task` (one step, one inline screenshot)."""
    data = shot if shot is not None else png((40, 120, 200))
    return Trajectory(task=Task(id=task, instruction=f"Find the opening hours for {task}"),
                      steps=[Step(index=1, action="click", arguments={"x": k, "y": 10})],
                      screenshots=[Screenshot.from_bytes(data, step=1, timing="after")],
                      final_answer=f"answer {k}")


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


async def run_load(url: str, *, n: int = 200, tasks: int = 10, api_key_env: str = "CUA_REWARD_API_KEY") -> dict:
    """N rollouts (T tasks) sent at once through `reward.remote`; the figures of the run."""
    from reward.remote import RemoteSession, RemoteSettings

    session = RemoteSession(RemoteSettings(url=url, api_key_env=api_key_env, max_concurrency=n,
                                           max_retries=1000, max_wait_s=3600))
    trajs = [trajectory(k, f"task-{k % tasks}") for k in range(n)]
    latencies: list[float] = []

    async def one(t: Trajectory) -> Any:
        t0 = time.perf_counter()
        out = await session.verify(t)
        latencies.append(time.perf_counter() - t0)
        return out

    t0 = time.perf_counter()
    try:
        outcomes = await asyncio.gather(*(one(t) for t in trajs))
    finally:
        await session.aclose()
    wall = time.perf_counter() - t0
    return {"requests": n, "tasks": tasks, "scored": sum(o.ok for o in outcomes),
            "unscored": sum(not o.ok for o in outcomes), "http_requests": session.requests,
            "retried_429": session.retries["429"], "retried_503": session.retries["503"],
            "p50_s": _pct(latencies, 0.5), "p95_s": _pct(latencies, 0.95), "wall_s": wall,
            "errors": sorted({str(o.error)[:120] for o in outcomes if not o.ok})}
