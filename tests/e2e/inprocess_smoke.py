"""Smoke run of `serving.inprocess.InProcessJudge` on the tiny model; run with the judge venv's python.

    .venv-judge/bin/python tests/e2e/inprocess_smoke.py MODEL_DIR

Prints one JSON line with what happened; exits non-zero on any failure. Driven by
tests/e2e/test_inprocess.py (the judge venv has vLLM; the project venv does not).
"""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PIL import Image
from pydantic import BaseModel, Field

from serving.inprocess import InProcessConfig, InProcessJudge
from verifier.judge.base import ImagePart, Message, Sampling
from verifier.trajectory import Screenshot


class Verdict(BaseModel):
    success: bool
    category: Literal["navigation", "input", "other"]
    confidence: float = Field(ge=0.0, le=1.0, multiple_of=0.01)
    reasoning: str = Field(max_length=80)


async def run(model_dir: str) -> dict:
    judge = InProcessJudge(InProcessConfig(model=model_dir, preset="cpu-tiny", image_max_side=224,
                                           max_model_len=4096))
    shots = [Screenshot.from_image(Image.new("RGB", (320, 200), c), step=i + 1)
             for i, c in enumerate([(200, 0, 0), (0, 200, 0), (0, 0, 200)])]
    sampling = Sampling(max_tokens=256)

    def msgs(n: int) -> list[Message]:
        return [Message.system("Judge the trajectory. JSON only."),
                Message.user("Did it work?", *[ImagePart(screenshot=s, label=f"Screenshot {i + 1}")
                                                for i, s in enumerate(shots[:n])])]

    # what verify() does while the rubric call runs: decode every distinct screenshot ahead
    prepared = await asyncio.to_thread(judge.prepare_images, shots + shots[:1])
    decoded_ahead = judge.decodes
    try:
        replies = await asyncio.gather(*[judge.complete(msgs(n), Verdict, stage=f"s{n}", sampling=sampling)
                                         for n in (0, 1, 3)])
    finally:
        await judge.aclose()
    return {"parsed": [r.parsed.model_dump() for r in replies],
            "prompt_tokens": [r.usage.prompt_tokens for r in replies],
            "completion_tokens": [r.usage.completion_tokens for r in replies],
            "generations": judge.generations, "decodes": judge.decodes, "prepared": prepared,
            "decoded_ahead": decoded_ahead, "models": [r.model for r in replies]}


if __name__ == "__main__":
    print("RESULT " + json.dumps(asyncio.run(run(sys.argv[1]))), flush=True)
