"""Our judge client (`OpenAICompatJudge`) against the real vLLM server: images, schemas, errors.

Random weights make the content meaningless; what is checked is that every reply parses into the
bounded pydantic model, that screenshots really reach the model (they cost prompt tokens), that
usage is accounted, and that failures come back as the right typed errors.
"""
from __future__ import annotations

import asyncio
import socket
from typing import Literal

import pytest
from PIL import Image
from pydantic import BaseModel, Field

from verifier.errors import JudgeError, JudgeUnavailableError
from verifier.judge import ImagePart, Message, Sampling
from verifier.judge.openai_compat import OpenAICompatJudge
from verifier.trajectory import Screenshot

pytestmark = pytest.mark.engine


class Finding(BaseModel):
    screenshot: int = Field(ge=1, le=12)
    note: str = Field(max_length=40)


class Verdict(BaseModel):
    success: bool
    category: Literal["navigation", "input", "other"]
    # multiple_of bounds the digits: with a bare float a weak model can write 1.000000... until
    # max_tokens (measured on this server with the guidance backend); multipleOf stops it.
    confidence: float = Field(ge=0.0, le=1.0, multiple_of=0.01)
    findings: list[Finding] = Field(max_length=3)
    reasoning: str = Field(max_length=120)


def _shots(n: int) -> list[Screenshot]:
    colours = [(220, 40, 40), (40, 220, 40), (40, 40, 220), (200, 200, 40), (30, 30, 30)]
    return [Screenshot.from_image(Image.new("RGB", (640, 400), colours[i % len(colours)]), step=i + 1)
            for i in range(n)]


def _messages(shots: list[Screenshot]) -> list[Message]:
    parts = [ImagePart(screenshot=s, label=f"Screenshot {i} of {len(shots)}") for i, s in enumerate(shots, 1)]
    return [Message.system("You judge computer-use trajectories. Answer with the JSON object only."),
            Message.user("Task: find a trail. Did the agent succeed?", *parts)]


SAMPLING = Sampling(temperature=0.0, max_tokens=512)


async def test_replies_parse_and_images_are_sent(engine):
    judge = OpenAICompatJudge(engine.judge_config())
    try:
        text_only = await judge.complete(_messages([]), Verdict, stage="outcome", sampling=SAMPLING)
        with_images = await judge.complete(_messages(_shots(3)), Verdict, stage="outcome", sampling=SAMPLING)
    finally:
        await judge.aclose()
    for reply in (text_only, with_images):
        assert isinstance(reply.parsed, Verdict)
        assert reply.model == engine.model
        assert reply.usage.attempts >= 1 and reply.usage.completion_tokens > 0 and reply.usage.latency_s > 0
    # 3 screenshots at image_max_side=224 -> a few dozen visual tokens each on the tiny model.
    assert with_images.usage.prompt_tokens - text_only.usage.prompt_tokens >= 3 * 16


async def test_concurrent_calls_all_parse(engine):
    judge = OpenAICompatJudge(engine.judge_config(max_concurrency=4))
    shots = _shots(4)
    try:
        replies = await asyncio.gather(*[
            judge.complete(_messages(shots[: 1 + i % 4]), Verdict, stage=f"s{i}", sampling=SAMPLING)
            for i in range(8)])
    finally:
        await judge.aclose()
    assert len(replies) == 8 and all(isinstance(r.parsed, Verdict) for r in replies)
    assert all(r.usage.prompt_tokens > 0 for r in replies)


async def test_wrong_key_is_a_typed_judge_error(engine, monkeypatch):
    monkeypatch.setenv("CUA_E2E_WRONG_KEY", "nope")
    judge = OpenAICompatJudge(engine.judge_config(api_key_env="CUA_E2E_WRONG_KEY"))
    try:
        with pytest.raises(JudgeError) as exc:
            await judge.complete(_messages([]), Verdict, stage="rubric", sampling=SAMPLING)
    finally:
        await judge.aclose()
    assert not isinstance(exc.value, JudgeUnavailableError)  # 401 is not retried as transient
    assert exc.value.stage == "rubric"


async def test_unreachable_endpoint_is_unavailable(engine):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    judge = OpenAICompatJudge(engine.judge_config(base_urls=[f"http://127.0.0.1:{dead_port}/v1"]))
    try:
        with pytest.raises(JudgeUnavailableError):
            await judge.complete(_messages([]), Verdict, stage="relevance", sampling=SAMPLING)
    finally:
        await judge.aclose()
