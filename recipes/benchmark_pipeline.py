"""Benchmark: what the DAG, the concurrency limit and the per-group cache buy, in calls and seconds.

Runs the real pipeline against `ScriptedJudge` with a fixed latency per judge call (default 50 ms,
a stand-in for a served judge), on a synthetic trajectory of M screenshots (a quarter of them
byte-identical repeats), and prints figures and ratios measured side by side in one run:

  1. one verification with the judge allowed C concurrent calls vs one call at a time;
  2. a GRPO group of G rollouts of one task with a shared StageCache vs G independent verifications;
  3. the reference implementation's call count and rounds for the same M (its published formula,
     M + S + 12 calls in about 13 sequential rounds), for context; the reference itself is not run.

    python recipes/benchmark_pipeline.py [--screenshots 24] [--group 8] [--latency 0.05]
"""
from __future__ import annotations

import argparse
import asyncio
import io
import time

from PIL import Image

from verifier import StageCache, VerifierConfig, verify
from verifier.testing import DEFAULTS, ScriptedJudge
from verifier.trajectory import Screenshot, Step, Task, Trajectory


def synthetic(m: int, rollout: int = 0) -> Trajectory:
    """M screenshots; every fourth repeats the previous one byte for byte (as static pages do).
    Rollouts of one task share their first three pages (same start URL), then diverge."""
    shots, shade = [], 0
    for i in range(1, m + 1):
        if i % 4:
            shade += 1
        own = rollout if i > 3 else 0
        img = Image.new("RGB", (320, 200), ((shade * 37) % 256, (shade * 91 + own * 13) % 256, 120))
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        shots.append(Screenshot.from_bytes(buf.getvalue(), step=i))
    steps = [Step(index=i, action="click", arguments={"coordinate": [i, i]}, thought=f"step {i}")
             for i in range(1, m + 1)]
    return Trajectory(task=Task(id="bench", instruction="Find the opening hours of the city library"),
                      steps=steps, screenshots=shots, final_answer=f"10:00-18:00 (rollout {rollout})")


class Limited:
    """Wrap a judge with a concurrency limit, as the HTTP judge's per-endpoint semaphore does."""

    def __init__(self, judge: ScriptedJudge, limit: int) -> None:
        self.judge, self.gate = judge, asyncio.Semaphore(limit)

    async def complete(self, *args, **kwargs):
        async with self.gate:
            return await self.judge.complete(*args, **kwargs)

    async def aclose(self) -> None:
        await self.judge.aclose()


async def one_run(m: int, latency: float, limit: int) -> tuple[float, int, int, int]:
    judge = ScriptedJudge(delays={stage: latency for stage in DEFAULTS})
    t0 = time.perf_counter()
    result = await verify(synthetic(m), VerifierConfig(), judge=Limited(judge, limit))
    analysed = len({n for shots in result.topk.values() for n in shots})
    return time.perf_counter() - t0, result.usage.calls, result.usage.rounds, analysed


async def group_run(m: int, g: int, latency: float, shared: bool) -> tuple[float, int, int]:
    judge = ScriptedJudge(delays={stage: latency for stage in DEFAULTS})
    cache = StageCache() if shared else None
    t0 = time.perf_counter()
    await asyncio.gather(*(verify(synthetic(m, k), VerifierConfig(), judge=Limited(judge, 64),
                                  cache=cache if shared else StageCache()) for k in range(g)))
    return time.perf_counter() - t0, len(judge.requests), len(judge.requests_for("rubric"))


async def main(args: argparse.Namespace) -> None:
    m, g, d, c = args.screenshots, args.group, args.latency, args.concurrency
    print(f"M={m} screenshots ({m - m // 4} distinct), judge latency {d * 1000:.0f} ms per call\n")

    wall_c, calls, rounds, analysed = await one_run(m, d, c)
    wall_1, *_ = await one_run(m, d, 1)
    print("1. one verification")
    print(f"   calls {calls}, rounds {rounds}, screenshots analysed S={analysed}")
    print(f"   concurrency {c}: {wall_c:.2f} s   one call at a time: {wall_1:.2f} s   "
          f"speed-up x{wall_1 / wall_c:.1f}")

    wall_s, calls_s, rubric_s = await group_run(m, g, d, shared=True)
    wall_i, calls_i, rubric_i = await group_run(m, g, d, shared=False)
    print(f"\n2. GRPO group of G={g} rollouts of one task")
    print(f"   shared cache: {calls_s} calls ({rubric_s} rubric), {wall_s:.2f} s")
    print(f"   independent : {calls_i} calls ({rubric_i} rubric), {wall_i:.2f} s")
    print(f"   calls saved {1 - calls_s / calls_i:.0%}, wall-clock ratio x{wall_i / wall_s:.2f}")

    ref_calls = m + analysed + 12
    print("\n3. reference implementation (formula, not run)")
    print(f"   ~{ref_calls} calls in ~13 rounds -> at least {13 * d:.2f} s of pure judge latency "
          f"vs ours {rounds * d:.2f} s ({rounds} rounds); calls ratio x{ref_calls / calls:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--screenshots", type=int, default=24)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per judge call")
    parser.add_argument("--concurrency", type=int, default=16)
    asyncio.run(main(parser.parse_args()))
