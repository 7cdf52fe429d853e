"""The bounds of the judge client's retries (issue 38 §10): a breaker forgets its failures when the
judge recovers, a server's Retry-After is capped by `retry_after_max_s`, and no backoff sleeps past
the deadline. Each was planted as a one-line change (the window kept, Retry-After uncapped: 3600 s
waits offline, the backoff uncut by the deadline) and no test noticed.
"""
from __future__ import annotations

import asyncio
import json
import time

import pytest
from judge_server import fast_config, ok, status
from pydantic import BaseModel

from verifier.errors import JudgeError
from verifier.judge import Message, make_judge
from verifier.judge.breaker import CircuitBreaker
from verifier.judge.deadline import deadline_in

VALID = json.dumps({"ok": True})
MSGS = [Message.user("Is it done?")]


class Answer(BaseModel):
    ok: bool


def test_a_recovered_judge_is_judged_on_what_comes_after_not_on_the_outage():
    clock = [100.0]
    b = CircuitBreaker(20, 5.0, window=40, clock=lambda: clock[0])
    for _ in range(20):  # 20 of 20 failed: down
        b.failure("connection refused")
    assert b.state == "open"
    clock[0] += 5.0
    assert b.acquire()  # the half-open probe ...
    b.success()  # ... succeeds: the judge is back
    b.failure("HTTP 503")  # one failure after the recovery: not an outage (21 of 22 with the old window)
    assert b.state == "closed" and b.acquire()


async def test_a_servers_retry_after_is_capped(server):
    server.push(status(429, headers={"Retry-After": "3600"}))  # an hour: capped at 0.2 s
    server.default = ok(VALID)
    judge = make_judge(fast_config(server.url, transport_retries=2, retry_after_max_s=0.2))
    try:
        start = time.monotonic()
        with deadline_in(5.0):  # a bound on the test: an uncapped wait ends here, failing the call
            reply = await asyncio.wait_for(judge.complete(MSGS, Answer, stage="rubric"), 10)
        assert reply.parsed.ok and len(server.requests) == 2
        assert time.monotonic() - start < 2.0
    finally:
        await judge.aclose()


async def test_no_backoff_sleeps_past_the_deadline(server):
    server.default = status(503)
    judge = make_judge(fast_config(server.url, transport_retries=4, backoff_initial_s=30.0, backoff_max_s=30.0,
                                   backoff_jitter_s=0.0, breaker_failures=0, call_deadline_share=1.0))
    try:
        start = time.monotonic()
        with deadline_in(0.5), pytest.raises(JudgeError):
            await asyncio.wait_for(judge.complete(MSGS, Answer, stage="rubric"), 5)
        assert time.monotonic() - start < 2.0  # ended at the deadline, not after a 30 s backoff
    finally:
        await judge.aclose()
