"""Prints the share of rollouts scored against a judge that answers a growing share of its requests
with HTTP 500, for the circuit breaker that tells flaky from down and for the old one that opened
after 10 failures in a row (not a test: the curves behind test_faults' flaky-judge test).

    PYTHONPATH=. python tests/judge/flaky_figures.py [seeds]

30 rollouts (10 tasks x 3) per point, the outcome reward with degraded verifications counted as
scored (as `score` counts them), 4 transport retries with a 10-50 ms backoff; each point is summed
over `seeds` runs (default 3) with different fault draws.
"""
from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_server import ScriptedServer
from test_faults import STREAK_BREAKER, flaky_run


async def point(rate: float, judge: dict, seeds: int) -> tuple[int, int, int, set]:
    scored = total = opened = 0
    verdicts: set = set()
    for seed in range(seeds):
        server = ScriptedServer().start()
        try:
            outc, state = await flaky_run(server, rate, judge, tasks=10, g=3, seed=seed)
        finally:
            server.stop()
        scored += sum(o is not None for o in outc)
        total += len(outc)
        opened += state == "open"
        verdicts |= {o for o in outc if o is not None}
    return scored, total, opened, verdicts


async def main(seeds: int) -> None:
    print("fault rate | ratio breaker (this) scored, runs ending open | streak breaker (old) scored, runs ending open")
    for rate in (0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0):
        new = await point(rate, {}, seeds)
        old = await point(rate, STREAK_BREAKER, seeds)
        print(f"{rate:4.0%} | {new[0]}/{new[1]} ({new[0] / new[1]:.0%}), open {new[2]}/{seeds}, verdicts {sorted(new[3])} "
              f"| {old[0]}/{old[1]} ({old[0] / old[1]:.0%}), open {old[2]}/{seeds}, verdicts {sorted(old[3])}", flush=True)


if __name__ == "__main__":
    logging.disable(logging.WARNING)
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
