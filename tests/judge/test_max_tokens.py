"""max_tokens is sized per call from the output schema, floats get bounded decimals, and a vLLM
context-overflow 400 is retried once with the max_tokens that fits (loopback server)."""
from __future__ import annotations

import json

import pytest
from judge_server import fast_config, ok, status
from pydantic import BaseModel, Field

from verifier.errors import JudgeError
from verifier.judge import Message, Sampling, make_judge
from verifier.judge.openai_compat import fitting_max_tokens
from verifier.judge.schema import json_schema_for, reply_token_budget, unbounded_paths, worst_case_chars

MSGS = [Message.system("Grade it."), Message.user("The task.")]


class Small(BaseModel):
    ok: bool
    note: str = Field(max_length=50)


class Item(BaseModel):
    text: str = Field(max_length=1500)
    points: int = Field(ge=0, le=10)


class Large(BaseModel):  # ~18k characters when every field is full, like an evidence batch
    items: list[Item] = Field(max_length=12)


class Huge(BaseModel):
    items: list[Item] = Field(max_length=60)


class Confidence(BaseModel):
    p: float = Field(ge=0.0, le=1.0)
    coarse: float = Field(ge=-5, le=5, multiple_of=0.5)


def test_float_properties_get_multiple_of_and_count_as_bounded():
    schema = json_schema_for(Confidence)
    # the step (0.01, or the field's own) over the range, emitted as an enum every backend reads
    assert schema["properties"]["p"]["enum"] == [k / 100 for k in range(101)]
    assert schema["properties"]["coarse"]["enum"] == [k / 2 for k in range(-10, 11)]
    assert unbounded_paths(schema) == []
    assert Confidence.model_validate({"p": 0.123, "coarse": 1.5}).p == 0.123  # parsing is unchanged
    assert worst_case_chars(schema) == len('{"p":' + "1.00" + ',"coarse":' + "-5.0" + "}")


def test_worst_case_and_budget():
    small, large = json_schema_for(Small), json_schema_for(Large)
    assert worst_case_chars(small) == len(json.dumps({"ok": False, "note": "x" * 50}, separators=(",", ":")))
    assert 18_000 < worst_case_chars(large) < 19_000
    assert reply_token_budget(small, floor=2048, cap=8192) == 2048  # the floor
    assert 6_000 < reply_token_budget(large, floor=2048, cap=8192) < 8192  # sized from the schema
    assert reply_token_budget(json_schema_for(Huge), floor=2048, cap=8192) == 8192  # the cap
    assert reply_token_budget(large, floor=9000, cap=8192) == 9000  # never below the floor
    assert reply_token_budget({"type": "string"}, floor=100, cap=500) == 500  # unbounded: the cap


async def test_max_tokens_sent_for_a_small_and_a_large_model(server):
    server.push(ok(json.dumps({"ok": True, "note": "n"})), ok(json.dumps({"items": []})))
    judge = make_judge(fast_config(server.url))  # sampling.max_tokens 2048, cap 8192
    await judge.complete(MSGS, Small, stage="s")
    await judge.complete(MSGS, Large, stage="s")
    small, large = (b["max_completion_tokens"] for b in server.bodies)
    assert small == 2048
    assert large == reply_token_budget(json_schema_for(Large), floor=2048, cap=8192) and large > 6000
    await judge.aclose()


VLLM_NEW = ("'max_tokens' or 'max_completion_tokens' is too large: 6500. This model's maximum context "
            "length is 4096 tokens and your request has 1000 input tokens (6500 > 4096 - 1000). None")
VLLM_OLD = ("This model's maximum context length is 4096 tokens. However, you requested 7000 tokens "
            "(1200 in the messages, 5800 in the completion). Please reduce the length of the messages or completion.")


def test_fitting_max_tokens_parses_both_vllm_wordings():
    assert fitting_max_tokens(VLLM_NEW, 6500) == 3096
    assert fitting_max_tokens(VLLM_OLD, 5800) == 2896
    assert fitting_max_tokens("This model's maximum context length is 4096 tokens. However, your request "
                              "has 5000 input tokens.", 2048) is None  # the prompt alone is too long
    assert fitting_max_tokens("response_format is not supported", 2048) is None


def _vllm_400(message: str) -> dict:
    body = {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}
    return status(400, raw=json.dumps(body))


async def test_context_overflow_400_is_retried_once_with_the_fitting_max_tokens(server):
    first = reply_token_budget(json_schema_for(Large), floor=2048, cap=8192)
    server.push(_vllm_400(VLLM_NEW.replace("6500", str(first))), ok("{not json"), ok(json.dumps({"items": []})))
    judge = make_judge(fast_config(server.url))
    reply = await judge.complete(MSGS, Large, stage="evidence")
    assert reply.parsed.items == []
    sent = [b["max_completion_tokens"] for b in server.bodies]
    assert sent[0] > 4096 and sent[1:] == [3096, 3096]  # the re-ask keeps the reduced value
    await judge.aclose()


async def test_other_400s_and_a_second_overflow_are_not_retried(server):
    server.push(_vllm_400("unknown field"))
    judge = make_judge(fast_config(server.url))
    with pytest.raises(JudgeError, match="rejected"):
        await judge.complete(MSGS, Small, stage="s")
    assert len(server.requests) == 1
    server.push(_vllm_400(VLLM_NEW), _vllm_400(VLLM_NEW.replace("1000 input", "3900 input")))
    with pytest.raises(JudgeError, match="rejected"):
        await judge.complete(MSGS, Large, stage="s", sampling=Sampling(max_tokens=6500))
    assert len(server.requests) == 3
    await judge.aclose()


async def test_the_reply_room_a_long_prompt_leaves_caps_max_tokens_and_a_cut_reply_is_an_error(server):
    """The budget may send a call with less reply room than its worst case (`verifier.budget`): the
    judge asks for no more than that room, and a reply that fills it is never parsed: re-asked once,
    then a typed `JudgeTruncatedError` (a failure, never a score)."""
    from verifier.errors import JudgeTruncatedError

    cut = '{"items": [{"text": "aaaa'
    server.push(ok(cut, finish_reason="length", completion_tokens=3000),
                ok(cut, finish_reason="length", completion_tokens=3000))
    judge = make_judge(fast_config(server.url))
    with pytest.raises(JudgeTruncatedError):
        await judge.complete(MSGS, Large, stage="evidence", sampling=Sampling(max_tokens=2048, reply_room=3000))
    assert [b["max_completion_tokens"] for b in server.bodies] == [3000, 3000]
    assert reply_token_budget(json_schema_for(Large), floor=2048, cap=8192) > 3000  # the room did cap it
    await judge.aclose()


def test_the_reply_room_stays_out_of_the_cache_key():
    """A reply that fits is the same under any larger room: the room is not in dumps."""
    assert "reply_room" not in Sampling(reply_room=100).model_dump()
    assert Sampling(reply_room=100).model_dump() == Sampling().model_dump()
