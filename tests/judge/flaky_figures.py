"""Prints the share of rollouts scored against a judge that answers a growing share of its requests
with HTTP 500: as configured (the circuit breaker that tells flaky from down, and ``flaky_retries``
while the judge is seen answering), without flaky retries (5 attempts a call), and with the old
breaker that opened after 10 failures in a row (not a test: the curves behind test_faults'
flaky-judge test). Also the judge requests per rollout and the wall time of each point.

    PYTHONPATH=. python tests/judge/flaky_figures.py [seeds]

30 rollouts (10 tasks x 3) per point, the outcome reward with degraded verifications counted as
scored (as `score` counts them), 4 transport retries (9 flaky ones) with a 10-50 ms backoff; each
point is summed over `seeds` runs (default 3) with different fault draws.
"""
from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_server import ScriptedServer
from test_faults import STREAK_BREAKER, flaky_run

NO_FLAKY_RETRIES = {"flaky_retries": 0}


async def point(rate: float, judge: dict, seeds: int) -> str:
    scored = total = opened = requests = 0
    verdicts: set = set()
    start = time.monotonic()
    for seed in range(seeds):
        server = ScriptedServer().start()
        try:
            outc, state = await flaky_run(server, rate, judge, tasks=10, g=3, seed=seed)
        finally:
            server.stop()
        scored += sum(o is not None for o in outc)
        total += len(outc)
        opened += state == "open"
        requests += len(server.requests)
        verdicts |= {o for o in outc if o is not None}
    return (f"{scored}/{total} ({scored / total:.0%}) open {opened}/{seeds} verdicts {sorted(verdicts)} "
            f"{requests / total:.1f} req/rollout {(time.monotonic() - start) / seeds:.1f} s/run")


async def main(seeds: int) -> None:
    print("fault rate | as configured | no flaky retries | old streak breaker, no flaky retries")
    for rate in (0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0):
        cells = [await point(rate, judge, seeds)
                 for judge in ({}, NO_FLAKY_RETRIES, {**STREAK_BREAKER, **NO_FLAKY_RETRIES})]
        print(f"{rate:4.0%} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    logging.disable(logging.WARNING)
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
