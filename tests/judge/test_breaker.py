"""The circuit breaker per judge endpoint: the state machine (fake clock), then the judge client
against a real loopback server that is down, comes back, or answers 4xx/429."""
from __future__ import annotations

import asyncio
import json
import time

import pytest
from judge_server import fast_config, ok, status
from pydantic import BaseModel

from verifier.errors import JudgeCircuitOpenError, JudgeError, JudgeUnavailableError
from verifier.judge import Message, make_judge
from verifier.judge.breaker import CircuitBreaker

VALID = json.dumps({"ok": True})
MSGS = [Message.user("Is it done?")]


class Answer(BaseModel):
    ok: bool


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_state_machine_open_half_open_probe_close():
    clock = Clock()
    b = CircuitBreaker(3, 10.0, clock=clock)
    for _ in range(2):
        assert b.acquire()
        b.failure("HTTP 503")
    b.success()  # a success resets the streak
    for _ in range(2):
        b.failure("HTTP 503")
    assert b.state == "closed" and b.acquire()
    b.failure("connection refused")
    assert b.state == "open" and not b.acquire() and b.retry_in() == 10.0
    clock.t += 9.9
    assert not b.acquire()
    clock.t += 0.1
    assert b.state == "half_open" and b.acquire()  # the probe
    assert b.probing and not b.acquire()  # one probe at a time
    b.failure("connection refused")  # the probe failed: open for another cool-down
    assert b.state == "open" and not b.acquire() and b.last_failure == "connection refused"
    clock.t += 10
    assert b.acquire()
    b.release()  # the probe was cancelled: no verdict, another probe may go
    assert b.acquire()
    b.success()
    assert b.state == "closed" and b.acquire() and b.acquire()


def test_threshold_zero_disables_the_breaker():
    b = CircuitBreaker(0, 10.0, clock=Clock())
    for _ in range(50):
        b.failure("down")
    assert b.state == "closed" and b.acquire()


async def test_down_judge_fails_fast_then_recovers_after_the_cool_down(server):
    server.default = status(503)
    judge = make_judge(fast_config(server.url, transport_retries=10, breaker_failures=3, breaker_cooldown_s=0.5))
    try:
        with pytest.raises(JudgeCircuitOpenError, match="circuit open") as err:
            await judge.complete(MSGS, Answer, stage="rubric")
        assert len(server.requests) == 3  # not 11: the breaker stopped the retries
        assert err.value.usage.attempts == 3 and isinstance(err.value, JudgeUnavailableError)
        start = time.monotonic()
        with pytest.raises(JudgeCircuitOpenError):
            await judge.complete(MSGS, Answer, stage="outcome")
        assert time.monotonic() - start < 0.1 and len(server.requests) == 3  # nothing sent
        server.default = ok(VALID)  # the judge is back
        await asyncio.sleep(0.55)
        replies = await asyncio.gather(*(judge.complete(MSGS, Answer, stage="s") for _ in range(4)))
        assert [r.parsed.ok for r in replies] == [True] * 4  # callers behind the probe waited for it
        assert len(server.requests) == 3 + 4
        assert judge._pool.breakers[server.url].state == "closed"
    finally:
        await judge.aclose()


async def test_failed_probe_opens_the_circuit_again(server):
    server.default = status(500)
    judge = make_judge(fast_config(server.url, transport_retries=5, breaker_failures=2, breaker_cooldown_s=0.3))
    try:
        with pytest.raises(JudgeCircuitOpenError):
            await judge.complete(MSGS, Answer, stage="s")
        await asyncio.sleep(0.35)
        with pytest.raises(JudgeCircuitOpenError):
            await judge.complete(MSGS, Answer, stage="s")
        assert len(server.requests) == 2 + 1  # exactly one probe after the cool-down
    finally:
        await judge.aclose()


@pytest.mark.parametrize("code,error", [(429, JudgeUnavailableError), (400, JudgeError)])
async def test_answers_that_prove_the_server_is_up_never_open_it(server, code, error):
    server.default = status(code, headers={"Retry-After": "0"})
    judge = make_judge(fast_config(server.url, transport_retries=2, breaker_failures=2))
    try:
        for _ in range(3):
            with pytest.raises(error, match=f"HTTP {code}") as err:
                await judge.complete(MSGS, Answer, stage="s")
            assert not isinstance(err.value, JudgeCircuitOpenError)
        assert len(server.requests) == (9 if code == 429 else 3)  # every attempt was sent
        assert judge._pool.breakers[server.url].state == "closed"
    finally:
        await judge.aclose()


async def test_one_open_replica_sends_the_load_to_the_other(server, server2):
    server.default = status(503)
    server2.default = ok(VALID)
    judge = make_judge(fast_config(server.url, server2.url, transport_retries=3, breaker_failures=2,
                                   breaker_cooldown_s=30))
    try:
        for _ in range(8):
            assert (await judge.complete(MSGS, Answer, stage="s")).parsed.ok
        assert len(server.requests) == 2 and len(server2.requests) == 8  # the dead one was asked twice
    finally:
        await judge.aclose()


async def test_a_deadline_bounds_one_call_and_counts_as_a_timeout(server):
    from judge_server import fault

    from verifier.errors import JudgeDeadlineError
    from verifier.judge.deadline import deadline_in

    server.default = fault("hang")
    judge = make_judge(fast_config(server.url, timeout_s=60.0, transport_retries=4, breaker_failures=5))
    try:
        start = time.monotonic()
        with deadline_in(1.5), pytest.raises(JudgeDeadlineError, match="deadline") as err:
            await judge.complete(MSGS, Answer, stage="rubric")
        assert 1.45 <= time.monotonic() - start < 4.0  # cut by the deadline, far below 5 x 60 s
        assert err.value.stage == "rubric" and len(server.requests) == 1
        assert judge._pool.breakers[server.url]._streak == 1  # the cut request was a timeout
    finally:
        await judge.aclose()
