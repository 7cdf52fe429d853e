"""Orchestration of the HTTP benchmark: a judge process, one verification per M, the figures.

Two judges:
- `start_latency_judge`: the loopback echo judge with a fixed latency, in its own process; request
  timestamps and texts come from its log (what the judge really saw).
- an engine (a real vLLM server, e.g. the CPU demo judge): timestamps and texts are recorded on the
  client side around each HTTP request, and vLLM's prefix-cache counters are read from ``/metrics``.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..cache import StageCache
from ..config import VerifierConfig
from ..judge.config import JudgeConfig
from ..judge.openai_compat import OpenAICompatJudge
from ..pipeline import verify
from ..trajectory import Trajectory
from .figures import Figures, Request, hit_rate, prefix_cache_counters, request_text, summarise


@dataclass
class LatencyJudgeProcess:
    url: str
    proc: subprocess.Popen

    def _post(self, route: str) -> dict[str, Any]:
        req = urllib.request.Request(self.url.removesuffix("/v1") + route, data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read())

    def reset(self) -> None:
        self._post("/bench/reset")

    def requests(self) -> list[Request]:
        return [Request(**r) for r in self._post("/bench/log")["requests"]]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def start_latency_judge(latency_s: float) -> LatencyJudgeProcess:
    """Start `verifier.perf.latency_judge` in a child process; returns once it listens."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, "-m", "verifier.perf.latency_judge", "--latency", str(latency_s)],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=10)
        raise RuntimeError(f"latency judge exited with code {proc.returncode}")
    return LatencyJudgeProcess(url=json.loads(line)["url"], proc=proc)


@dataclass
class ClientLog:
    """Requests recorded on the client around each HTTP request (engine mode)."""

    requests: list[Request] = field(default_factory=list)

    def attach(self, judge: OpenAICompatJudge) -> None:
        pool = judge._pool
        send = pool.send

        async def recorded(request: dict[str, Any], tally: Any, *, stage: str) -> Any:
            text, size = request_text(request)
            start = time.monotonic()
            try:
                return await send(request, tally, stage=stage)
            finally:
                self.requests.append(Request(start=start, end=time.monotonic(), text=text, payload_bytes=size))

        pool.send = recorded  # type: ignore[method-assign]


@dataclass
class LoopLag:
    """Worst lateness of a 10 ms timer on the client's event loop: how long the loop was blocked
    (image work must run in worker threads, never on the loop)."""

    period_s: float = 0.01
    worst: float = 0.0

    async def run(self) -> None:
        while True:
            t = time.perf_counter()
            await asyncio.sleep(self.period_s)
            self.worst = max(self.worst, time.perf_counter() - t - self.period_s)


def read_counters(base_url: str) -> tuple[float, float]:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/metrics", timeout=30) as resp:
        return prefix_cache_counters(resp.read().decode())


async def measure(trajectories: list[Trajectory], config: JudgeConfig, *, latency_s: float,
                  requests: Callable[[], list[Request]], verifier: VerifierConfig | None = None,
                  client_log: ClientLog | None = None) -> Figures:
    """Verify `trajectories` (one, or a GRPO group of one task sharing a `StageCache`) concurrently
    with a fresh client (so a fresh image cache) and compute the figures."""
    judge = OpenAICompatJudge(config)
    if client_log is not None:
        client_log.attach(judge)
    cache = StageCache()
    lag = LoopLag()
    ticker = asyncio.create_task(lag.run())
    try:
        t0, cpu0 = time.perf_counter(), time.process_time()
        outcomes = await asyncio.gather(*(verify(t, verifier or VerifierConfig(), judge=judge, cache=cache)
                                          for t in trajectories), return_exceptions=True)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    finally:
        ticker.cancel()
        await judge.aclose()
    # A failed verification (the random-weight CPU judge can exhaust its re-asks) still sent its
    # traffic: say so, and count calls and rounds of the verifications that finished.
    results = [o for o in outcomes if not isinstance(o, BaseException)]
    for o in outcomes:
        if isinstance(o, BaseException):
            print(f"a verification failed (its requests still count): {type(o).__name__}: {o}"[:300],
                  file=sys.stderr)
    return summarise(screenshots=len(trajectories[0].screenshots), calls=sum(r.usage.calls for r in results),
                     rounds=max((r.usage.rounds for r in results), default=0), wall_s=wall, latency_s=latency_s,
                     requests=requests(), client_cpu_s=cpu, loop_lag_s=lag.worst)


def engine_hit_rate(base_url: str, run: Callable[[], Any]) -> tuple[Any, float | None]:
    """Run `run()` and return (its result, vLLM's prefix-cache hit rate over it)."""
    before = read_counters(base_url)
    out = run()
    return out, hit_rate(before, read_counters(base_url))
