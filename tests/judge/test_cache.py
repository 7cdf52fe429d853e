"""On-disk response cache: a hit costs no HTTP request; the key covers what changes the reply."""
from __future__ import annotations

import io
import json

import pytest
from judge_server import fast_config, ok
from PIL import Image
from pydantic import BaseModel, Field

from verifier.errors import JudgeInvalidOutputError
from verifier.judge import ImagePart, Message, Sampling, make_judge
from verifier.trajectory import Screenshot


class Score(BaseModel):
    score: int = Field(ge=0, le=10)


def shot(color) -> Screenshot:
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), color).save(buf, format="PNG")
    return Screenshot.from_bytes(buf.getvalue(), step=1)


def msgs(color=(1, 2, 3)):
    return [Message.system("Grade."), Message.user("Look", ImagePart(screenshot=shot(color), label="Shot 1"))]


async def test_cache_hit_makes_zero_requests_even_in_a_new_judge(server, tmp_path):
    server.default = ok(json.dumps({"score": 4}), model="served-judge-v2")
    cfg = fast_config(server.url, cache_dir=str(tmp_path / "cache"))
    first = make_judge(cfg)
    miss = await first.complete(msgs(), Score, stage="s")
    assert miss.usage.cached is False and len(server.requests) == 1
    await first.aclose()

    second = make_judge(cfg)  # e.g. a re-run of the same scoring job
    hit = await second.complete(msgs(), Score, stage="other-stage-name")
    assert len(server.requests) == 1
    assert hit.parsed == miss.parsed and hit.raw == miss.raw and hit.model == "served-judge-v2"
    assert hit.usage.cached is True and hit.usage.attempts == 0
    await second.aclose()


async def test_key_changes_with_image_sampling_and_model(server, tmp_path):
    server.default = ok(json.dumps({"score": 4}))
    cfg = fast_config(server.url, cache_dir=str(tmp_path))
    judge = make_judge(cfg)
    await judge.complete(msgs(), Score, stage="s")
    await judge.complete(msgs(color=(9, 9, 9)), Score, stage="s")  # different pixels
    await judge.complete(msgs(), Score, stage="s", sampling=Sampling(max_tokens=100))
    await judge.complete(msgs(), Score, stage="s")  # repeat of the first: hit
    assert len(server.requests) == 3
    other = make_judge(cfg.model_copy(update={"model": "other-judge"}))
    await other.complete(msgs(), Score, stage="s")
    assert len(server.requests) == 4
    await judge.aclose()
    await other.aclose()


async def test_unseeded_sampling_is_not_cached_but_seeded_is(server, tmp_path):
    server.default = ok(json.dumps({"score": 4}))
    judge = make_judge(fast_config(server.url, cache_dir=str(tmp_path)))
    hot = Sampling(temperature=0.8)
    await judge.complete(msgs(), Score, stage="vote", sampling=hot)
    await judge.complete(msgs(), Score, stage="vote", sampling=hot)
    assert len(server.requests) == 2  # k votes must stay k independent samples
    seeded = Sampling(temperature=0.8, seed=3)
    await judge.complete(msgs(), Score, stage="vote", sampling=seeded)
    await judge.complete(msgs(), Score, stage="vote", sampling=seeded)
    assert len(server.requests) == 3
    await judge.aclose()


async def test_failed_calls_are_not_cached(server, tmp_path):
    server.push(ok("bad"), ok("bad"), ok("bad"))
    server.default = ok(json.dumps({"score": 1}))
    judge = make_judge(fast_config(server.url, cache_dir=str(tmp_path)))
    with pytest.raises(JudgeInvalidOutputError):
        await judge.complete(msgs(), Score, stage="s")
    assert len(judge.cache) == 0
    reply = await judge.complete(msgs(), Score, stage="s")
    assert reply.parsed.score == 1 and len(server.requests) == 4
    await judge.aclose()
