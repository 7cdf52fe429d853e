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
    assert b.state == "closed" and b.acquire()  # 2 known requests: fewer than 3 to judge on
    b.failure("connection refused")  # 3 of 3 failed: down
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
    b.failure("HTTP 503")  # the window was forgotten on recovery: 1 failure of 2 is not down
    assert b.state == "closed"


def test_a_flaky_judge_keeps_its_circuit_closed_a_dead_one_opens_it():
    """Issue 20 §5: failures mixed with answers (a flaky judge, 60% 500s, runs of 10 failures and
    more included) never open the circuit; nearly every request failing does."""
    import random

    rng = random.Random(7)
    flaky = CircuitBreaker(20, 30.0, clock=Clock())
    longest = run = 0
    for _ in range(2000):
        if rng.random() < 0.6:
            flaky.failure("HTTP 500")
            run += 1
            longest = max(longest, run)
        else:
            flaky.success()
            run = 0
        assert flaky.state == "closed"
    assert longest >= 10  # the run that opened the old streak breaker (10 in a row)
    assert 0.3 < flaky.failure_share() < 0.9
    down = CircuitBreaker(20, 30.0, clock=Clock())
    for _ in range(30):
        down.success()  # healthy for a while, then refused for good
    opened_after = next(k for k in range(1, 100) if (down.failure("refused"), down.state)[1] == "open")
    assert opened_after == 38  # 38 of the last 40 = 95%


def test_stalls_in_a_row_open_the_circuit_and_an_answer_between_resets_them():
    """Issue 20 §6: a hung judge answers nothing, so stalls (timeouts) open the circuit on their own,
    at one request at a time, without waiting for the window."""
    b = CircuitBreaker(20, 30.0, clock=Clock())
    for _ in range(10):
        b.success()
    b.failure("timeout", stall=True)
    b.failure("timeout", stall=True)
    b.success()
    b.failure("timeout", stall=True)
    b.failure("HTTP 500")  # an answer, even an error, is not a stall
    b.failure("timeout", stall=True)
    b.failure("timeout", stall=True)
    assert b.state == "closed"
    b.failure("timeout", stall=True)
    assert b.state == "open"


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
    judge = make_judge(fast_config(server.url, timeout_s=60.0, transport_retries=4, breaker_failures=5,
                                   call_deadline_share=1.0))
    try:
        start = time.monotonic()
        with deadline_in(1.5), pytest.raises(JudgeDeadlineError, match="deadline") as err:
            await judge.complete(MSGS, Answer, stage="rubric")
        assert 1.45 <= time.monotonic() - start < 4.0  # cut by the deadline, far below 5 x 60 s
        assert err.value.stage == "rubric" and len(server.requests) == 1
        assert judge._pool.breakers[server.url]._streak == 1  # the cut request was a timeout
    finally:
        await judge.aclose()


async def test_a_hung_judge_costs_one_share_per_call_and_opens_the_circuit_one_call_at_a_time(server):
    """Issue 20 §6: one call's retries together get its share of the time left (a third by default),
    and ends as the judge's timeout, not the deadline's; its stall teaches the breaker, so calls made
    one at a time against a judge that never answers open the circuit after three stalls, and the
    whole run stays within the deadline."""
    from judge_server import fault

    from verifier.judge.deadline import deadline_in

    server.default = fault("hang")
    judge = make_judge(fast_config(server.url, timeout_s=60.0, transport_retries=4))
    try:
        start = time.monotonic()
        with deadline_in(3.0):
            with pytest.raises(JudgeUnavailableError, match="timeout") as err:
                await judge.complete(MSGS, Answer, stage="rubric")
            first = time.monotonic() - start
            assert 0.9 <= first < 1.6, first  # a third of 3 s, not all of it (nor 5 x 60 s)
            assert type(err.value) is JudgeUnavailableError and len(server.requests) == 1
            for _ in range(2):  # the next stalls, one call at a time, each a third of what is left
                with pytest.raises(JudgeUnavailableError, match="timeout"):
                    await judge.complete(MSGS, Answer, stage="evidence")
            assert judge._pool.breakers[server.url].state == "open" and len(server.requests) == 3
            with pytest.raises(JudgeCircuitOpenError):  # fails fast: the judge is not asked again
                await judge.complete(MSGS, Answer, stage="outcome")
        assert len(server.requests) == 3 and time.monotonic() - start < 3.0
    finally:
        await judge.aclose()


def test_stalls_that_overlap_count_once():
    """A burst of concurrent requests timing out together (a slow moment) is one stall, not a dead
    judge; stalls one after another still open the circuit."""
    clock = Clock()
    b = CircuitBreaker(20, 30.0, clock=clock)
    sent = clock.t
    clock.t += 60  # ten requests sent together, all timing out at once
    for _ in range(10):
        b.failure("timeout", stall=True, started=sent)
    assert b.state == "closed"
    for _ in range(2):  # the next rounds, each sent after the last one timed out
        sent = clock.t
        clock.t += 60
        b.failure("timeout", stall=True, started=sent)
    assert b.state == "open"
