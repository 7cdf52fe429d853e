"""Re-ask layer and request shape against a real loopback server: invalid JSON, schema
violations, truncation, exhaustion errors, response_format, json_object fallback, images."""
from __future__ import annotations

import base64
import io
import json

import pytest
from judge_server import fast_config, ok
from PIL import Image
from pydantic import BaseModel, Field

from verifier.errors import JudgeInvalidOutputError, JudgeTruncatedError
from verifier.judge import ImagePart, Message, Sampling, make_judge
from verifier.judge.openai_compat import TRUNCATION_NOTE
from verifier.judge.schema import json_schema_for
from verifier.trajectory import Screenshot


class Score(BaseModel):
    score: int = Field(ge=0, le=10)
    reason: str = Field(max_length=100)


VALID = json.dumps({"score": 7, "reason": "ok"})
MSGS = [Message.system("Grade it."), Message.user("The task.")]


async def test_invalid_json_is_re_asked_with_the_bad_reply_and_the_error(server):
    server.push(ok("{score: seven"), ok(VALID))
    judge = make_judge(fast_config(server.url))
    reply = await judge.complete(MSGS, Score, stage="rubric")
    assert reply.parsed.score == 7 and reply.raw == VALID
    assert len(server.requests) == 2 and reply.usage.attempts == 2
    assert reply.usage.prompt_tokens == 20 and reply.usage.completion_tokens == 10
    first, second = server.bodies
    assert second["messages"][:2] == first["messages"]  # the original conversation, unchanged
    assert second["messages"][2] == {"role": "assistant", "content": "{score: seven"}
    assert second["messages"][3]["role"] == "user"
    assert "not valid JSON" in second["messages"][3]["content"]
    await judge.aclose()


async def test_schema_violation_is_re_asked_with_the_field_error(server):
    bad = json.dumps({"score": 42, "reason": "too high"})
    server.push(ok(bad), ok(VALID))
    judge = make_judge(fast_config(server.url))
    reply = await judge.complete(MSGS, Score, stage="rubric")
    assert reply.parsed.score == 7
    reask = server.bodies[1]["messages"]
    assert reask[2]["content"] == bad
    assert "score" in reask[3]["content"] and "less than or equal to 10" in reask[3]["content"]
    await judge.aclose()


async def test_invalid_output_exhausted_raises_with_last_reply_and_usage(server):
    server.push(ok("garbage 1"), ok("garbage 2"), ok(json.dumps({"score": -1, "reason": "x"})))
    judge = make_judge(fast_config(server.url, reask_retries=2))
    with pytest.raises(JudgeInvalidOutputError) as err:
        await judge.complete(MSGS, Score, stage="relevance")
    assert not isinstance(err.value, JudgeTruncatedError)
    assert len(server.requests) == 3
    assert err.value.last_reply == '{"score": -1, "reason": "x"}'
    assert err.value.usage.attempts == 3 and err.value.usage.completion_tokens == 15
    assert err.value.stage == "relevance"
    # each re-ask carries only the latest failure: prompts stay bounded
    assert [m["content"] for m in server.bodies[2]["messages"][2:3]] == ["garbage 2"]
    assert len(server.bodies[2]["messages"]) == 4
    await judge.aclose()


async def test_truncated_reply_is_never_parsed_and_re_asked_once(server):
    # the truncated text happens to be valid JSON: it must still not be accepted
    server.push(ok(VALID, finish_reason="length"), ok(VALID))
    judge = make_judge(fast_config(server.url))
    reply = await judge.complete(MSGS, Score, stage="outcome")
    assert len(server.requests) == 2 and reply.usage.attempts == 2
    assert server.bodies[1]["messages"][-1] == {"role": "user", "content": TRUNCATION_NOTE}
    await judge.aclose()


async def test_truncated_twice_raises_truncated_error(server):
    server.push(ok('{"score": 3, "reason": "aaaa', finish_reason="length"), ok("not json"),
                ok('{"score": 3, "rea', finish_reason="length"), ok(VALID))
    judge = make_judge(fast_config(server.url, reask_retries=4))
    with pytest.raises(JudgeTruncatedError) as err:
        await judge.complete(MSGS, Score, stage="outcome")
    assert len(server.requests) == 3  # a second truncation ends the call despite budget left
    assert err.value.last_reply == '{"score": 3, "rea'
    assert err.value.usage.attempts == 3
    await judge.aclose()


async def test_truncation_without_reask_budget_raises_immediately(server):
    server.push(ok(VALID, finish_reason="length"))
    judge = make_judge(fast_config(server.url, reask_retries=0))
    with pytest.raises(JudgeTruncatedError):
        await judge.complete(MSGS, Score, stage="outcome")
    assert len(server.requests) == 1
    await judge.aclose()


async def test_reply_cut_by_a_full_context_is_a_clear_error_not_re_asked(server):
    """vLLM clamps max_tokens to the context the prompt leaves: a reply cut below the budget means
    the prompt filled the context, and a re-ask (the cut reply plus a note) could only be longer."""
    server.push(ok('{"score": 3, "rea', finish_reason="length", prompt_tokens=32000, completion_tokens=768),
                ok(VALID))
    judge = make_judge(fast_config(server.url))
    with pytest.raises(JudgeTruncatedError, match=r"cut after 768 tokens.*32000 tokens.*--max-model-len"):
        await judge.complete(MSGS, Score, stage="outcome")
    assert len(server.requests) == 1
    await judge.aclose()


async def test_request_carries_strict_json_schema_and_explicit_sampling(server):
    server.default = ok(VALID)
    judge = make_judge(fast_config(server.url, max_tokens_cap=50))  # cap <= floor: exactly the floor
    await judge.complete(MSGS, Score, stage="s", sampling=Sampling(temperature=0.3, max_tokens=77, seed=5))
    body = server.bodies[0]
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "Score", "schema": json_schema_for(Score), "strict": True}}
    assert not [k for k in body if k.startswith("guided")]
    assert "structured_outputs" not in body
    assert (body["model"], body["temperature"], body["max_completion_tokens"], body["seed"]) == ("judge", 0.3, 77, 5)
    assert "max_tokens" not in body  # deprecated in vLLM; max_completion_tokens is read first
    assert body["messages"][0] == {"role": "system", "content": "Grade it."}
    await judge.aclose()


async def test_json_object_fallback_puts_schema_in_prompt_and_strips_fences(server):
    server.push(ok("```json\n" + VALID + "\n```"))
    judge = make_judge(fast_config(server.url, structured_output="json_object"))
    reply = await judge.complete(MSGS, Score, stage="s")
    assert reply.parsed.score == 7
    body = server.bodies[0]
    assert body["response_format"] == {"type": "json_object"}
    system = body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Grade it.")
    assert json.dumps(json_schema_for(Score), separators=(",", ":")) in system["content"]
    await judge.aclose()


async def test_control_characters_in_reply_strings_are_accepted(server):
    server.push(ok('{"score": 1, "reason": "two\nlines"}'))
    judge = make_judge(fast_config(server.url))
    assert (await judge.complete(MSGS, Score, stage="s")).parsed.reason == "two\nlines"
    assert len(server.requests) == 1
    await judge.aclose()


def _png(w, h, color):
    buf = io.BytesIO()
    Image.new("RGB", (w, h), color).save(buf, format="PNG")
    return buf.getvalue()


async def test_images_arrive_as_labelled_data_urls_of_the_configured_size(server):
    server.default = ok(VALID)
    judge = make_judge(fast_config(server.url, image_max_side=400, image_max_pixels=40_000))
    big = Screenshot.from_bytes(_png(1600, 900, (10, 200, 10)), step=1)
    tall = Screenshot.from_bytes(_png(300, 1200, (200, 10, 10)), step=2)
    msgs = [Message.system("Grade."), Message.user("Look:", ImagePart(screenshot=big, label="Screenshot 1 of 2"),
                                                   ImagePart(screenshot=tall))]
    await judge.complete(msgs, Score, stage="evidence")
    await judge.complete(msgs, Score, stage="evidence")
    parts = server.bodies[0]["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "text", "image_url", "image_url"]
    assert parts[1]["text"] == "Screenshot 1 of 2"
    sizes = []
    for part in parts[2:]:
        url = part["image_url"]["url"]
        assert url.startswith("data:image/png;base64,")
        img = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        sizes.append(img.size)
    # 1600x900: the pixel cap (40k) binds before the side cap; 300x1200: the side cap (400) binds
    assert sizes[0][0] * sizes[0][1] <= 40_000 and sizes[0] == (266, 150)
    assert sizes[1] == (100, 400)
    assert judge.encoder.encodes == 2  # the second call reused both encodings
    assert "uuid" not in parts[2]
    await judge.aclose()


async def test_images_outside_user_messages_are_refused(server):
    judge = make_judge(fast_config(server.url))
    bad = Message(role="system", content=[ImagePart(screenshot=Screenshot.from_bytes(_png(8, 8, (0, 0, 0)), step=1))])
    with pytest.raises(ValueError, match="user messages"):
        await judge.complete([bad], Score, stage="s")
    assert server.requests == []
    await judge.aclose()
