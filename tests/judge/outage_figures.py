"""Prints how long a reward batch takes to come back all-None against a judge that is down or
hangs, for two waves in a row (not a test: a figure to read).

    PYTHONPATH=. python tests/judge/outage_figures.py hang [deadline_s]
    PYTHONPATH=. python tests/judge/outage_figures.py down

A batch is 2 tasks x 3 rollouts scored by the process and the outcome reward at once, against a
loopback judge that accepts and never answers (`hang`) or answers 503 (`down`), with
``timeout_s=5`` and the default retries (4), backoff, breaker (10 failures, 30 s) and batch
deadline (900 s, or `deadline_s`).
"""
from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_server import ScriptedServer, fault, status
from PIL import Image

# imported here, outside the timed batches
import verifier.judge.openai_compat
import verifier.pipeline  # noqa: F401
from reward import make_uv_rewards


def rollouts(tag: str) -> tuple[list, list]:
    prompts, completions = [], []
    for t in range(2):
        for j in range(3):
            prompts.append([{"role": "user", "content": [{"type": "image", "image": Image.new("RGB", (8, 8), "white")},
                                                         {"type": "text", "text": f"Task {t}: find the price"}]}])
            completions.append([{"role": "assistant", "content": f"{tag}: the price is {j}"}])
    return prompts, completions


async def main(kind: str, deadline_s: float) -> None:
    server = ScriptedServer().start()
    server.default = fault("hang") if kind == "hang" else status(503)
    uv = make_uv_rewards(judge_url=server.url, model="judge", judge={"timeout_s": 5.0}, batch_deadline_s=deadline_s)
    for wave in (1, 2):
        start = time.monotonic()
        proc, outc = await asyncio.gather(uv.process(*rollouts(f"w{wave}")), uv.outcome(*rollouts(f"w{wave}")))
        assert proc == outc == [None] * 6
        print(f"{kind}, batch deadline {deadline_s:g}s, wave {wave}: all None after {time.monotonic() - start:.2f}s; "
              f"judge requests so far: {len(server.requests)}", flush=True)
    await uv.process.session.aclose()
    server.stop()


if __name__ == "__main__":
    logging.disable(logging.WARNING)
    asyncio.run(main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 900.0))
