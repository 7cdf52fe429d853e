"""The fault-kind matrix against a real loopback judge (fast tier).

Each kind of transport fault - HTTP 500, 429 with Retry-After, a reset connection, a timeout, a
judge that never answers, a 200 whose body is an HTML page, a 200 whose JSON is cut - is retried
with the transport retry policy and then either succeeds or ends in a typed `JudgeUnavailableError`
with the attempts counted. Nothing else escapes (no AttributeError, no bare ValueError).
"""
from __future__ import annotations

import json

import pytest
from judge_server import fast_config, fault, ok, status
from pydantic import BaseModel

from verifier.errors import JudgeMalformedResponseError, JudgeUnavailableError
from verifier.judge import Message, make_judge

VALID = json.dumps({"ok": True, "why": "fine"})
MSGS = [Message.system("You are a judge."), Message.user("Is it done?")]


class Answer(BaseModel):
    ok: bool
    why: str


#: kind -> (the faulty reply, JudgeConfig overrides, the typed error once retries are spent, its text)
FAULTS = {
    "http_500": (status(500), {}, JudgeUnavailableError, "HTTP 500"),
    "http_429": (status(429, headers={"Retry-After": "0.2"}), {}, JudgeUnavailableError, "HTTP 429"),
    "reset": (fault("reset"), {}, JudgeUnavailableError, "connection error"),
    "timeout": (ok(VALID, delay=1.0), {"timeout_s": 0.25}, JudgeUnavailableError, "timeout"),
    "hang": (fault("hang"), {"timeout_s": 0.25}, JudgeUnavailableError, "timeout"),
    "html_200": (fault("html"), {}, JudgeMalformedResponseError, "502 Bad Gateway"),
    "truncated_json": (fault("truncated"), {}, JudgeMalformedResponseError, "not valid JSON"),
}


@pytest.mark.parametrize("kind", sorted(FAULTS))
async def test_fault_is_retried_then_succeeds(server, kind):
    bad, overrides, _, _ = FAULTS[kind]
    server.push(bad, bad, ok(VALID))
    judge = make_judge(fast_config(server.url, transport_retries=2, **overrides))
    try:
        reply = await judge.complete(MSGS, Answer, stage="outcome")
    finally:
        await judge.aclose()
    assert reply.parsed == Answer(ok=True, why="fine")
    assert reply.usage.attempts == 3 and len(server.requests) == 3
    if kind == "http_429":  # the server's Retry-After set both waits, not the 10 ms backoff
        gaps = [b.t - a.t for a, b in zip(server.requests, server.requests[1:])]
        assert min(gaps) >= 0.18, gaps


@pytest.mark.parametrize("kind", sorted(FAULTS))
async def test_fault_outliving_the_retries_is_a_typed_error(server, kind):
    bad, overrides, error, text = FAULTS[kind]
    server.default = bad
    judge = make_judge(fast_config(server.url, transport_retries=2, **overrides))
    try:
        with pytest.raises(JudgeUnavailableError) as err:
            await judge.complete(MSGS, Answer, stage="rubric")
    finally:
        await judge.aclose()
    assert type(err.value) is error and text in str(err.value)
    assert err.value.stage == "rubric" and err.value.usage.attempts == 3
    assert len(server.requests) == 3  # every attempt really reached the server
