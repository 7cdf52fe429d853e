"""How many attempts one judge call gets: more against a judge that is up but flaky (error answers
mixed with successes, ``flaky_retries``), only ``transport_retries`` against one that fails every
request or refuses connections, and never more than the call's share of its deadline (issue 20 §5)."""
from __future__ import annotations

import itertools
import json
import time

import pytest
from judge_server import fast_config, fault, ok, status
from pydantic import BaseModel

from verifier.errors import JudgeUnavailableError
from verifier.judge import Message, make_judge
from verifier.judge.deadline import deadline_in

VALID = json.dumps({"ok": True})
MSGS = [Message.user("Is it done?")]


class Answer(BaseModel):
    ok: bool


async def test_an_answering_judge_gets_flaky_retries_a_failing_one_only_transport_retries(server):
    judge = make_judge(fast_config(server.url, transport_retries=2, flaky_retries=9))
    try:
        server.push(ok(VALID), *[status(500)] * 7, ok(VALID))
        await judge.complete(MSGS, Answer, stage="rubric")  # the judge is up: one success seen
        reply = await judge.complete(MSGS, Answer, stage="outcome")
        assert reply.parsed.ok and reply.usage.attempts == 8  # 7 failures, recovered; not cut at 3
        server.default = status(500)  # every request fails from here: at most 1 + flaky_retries
        with pytest.raises(JudgeUnavailableError, match="HTTP 500") as err:
            await judge.complete(MSGS, Answer, stage="outcome")
        assert err.value.usage.attempts == 10 and len(server.requests) == 9 + 10
        server.default = fault("reset")  # no answer at all: not flakiness, transport_retries only
        with pytest.raises(JudgeUnavailableError, match="connection error") as err:
            await judge.complete(MSGS, Answer, stage="outcome")
        assert err.value.usage.attempts == 3
    finally:
        await judge.aclose()
    fresh = make_judge(fast_config(server.url, transport_retries=2, flaky_retries=9))
    try:  # a judge never seen answering: its 500s are an outage, not flakiness
        server.default = status(500)
        with pytest.raises(JudgeUnavailableError, match="HTTP 500") as err:
            await fresh.complete(MSGS, Answer, stage="rubric")
        assert err.value.usage.attempts == 3
    finally:
        await fresh.aclose()


async def test_flaky_retries_stay_within_the_calls_share_of_the_deadline(server):
    """20 flaky retries 0.3 s apart would take 6 s; the call's third of a 3 s deadline cuts them,
    as the judge's error (HTTP 500), not the deadline's."""
    judge = make_judge(fast_config(server.url, transport_retries=2, flaky_retries=20, backoff_initial_s=0.3,
                                   backoff_max_s=0.3, backoff_jitter_s=0.0))
    try:
        server.push(ok(VALID))
        await judge.complete(MSGS, Answer, stage="rubric")
        server.default = status(500)
        start = time.monotonic()
        with deadline_in(3.0), pytest.raises(JudgeUnavailableError, match="HTTP 500") as err:
            await judge.complete(MSGS, Answer, stage="outcome")
        assert time.monotonic() - start < 1.5 and 3 <= err.value.usage.attempts <= 5
        assert type(err.value) is JudgeUnavailableError  # not JudgeDeadlineError
    finally:
        await judge.aclose()


async def test_flaky_retries_pace_at_the_last_transport_backoff(server):
    """Past ``transport_retries`` the backoff stops doubling (0.02, 0.04, then 0.04 s; doubling on
    would reach 1.28 s before the 8th attempt): the judge answers, there is no outage to wait out."""
    judge = make_judge(fast_config(server.url, transport_retries=2, flaky_retries=9, backoff_initial_s=0.02,
                                   backoff_max_s=10.0, backoff_jitter_s=0.0))
    try:
        server.push(ok(VALID), *[status(500)] * 7, ok(VALID))
        await judge.complete(MSGS, Answer, stage="rubric")
        start = time.monotonic()
        assert (await judge.complete(MSGS, Answer, stage="outcome")).usage.attempts == 8
        assert time.monotonic() - start < 1.0
        times = [r.t for r in server.requests[1:]]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert min(gaps[2:]) >= 0.035 and max(gaps) < 0.5, gaps
    finally:
        await judge.aclose()
