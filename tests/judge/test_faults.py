"""The fault-kind matrix against a real loopback judge (fast tier).

Each kind of transport fault - HTTP 500, 429 with Retry-After, a reset connection, a timeout, a
judge that never answers, a 200 whose body is an HTML page, a 200 whose JSON is cut - is retried
with the transport retry policy and then either succeeds or ends in a typed `JudgeUnavailableError`
with the attempts counted. Nothing else escapes (no AttributeError, no bare ValueError). Under a
reward batch over the real pipeline, the same faults lose nothing when retries succeed, and give
`None` (never a 0) when they do not.
"""
from __future__ import annotations

import asyncio
import json

import pytest
from judge_server import echo, fast_config, fault, ok, status
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
    # timeouts long enough that an answered attempt is never cut on a busy 2-core machine
    "timeout": (ok(VALID, delay=3.0), {"timeout_s": 1.0}, JudgeUnavailableError, "timeout"),
    "hang": (fault("hang"), {"timeout_s": 1.0}, JudgeUnavailableError, "timeout"),
    "html_200": (fault("html"), {}, JudgeMalformedResponseError, "502 Bad Gateway"),
    "truncated_json": (fault("truncated"), {}, JudgeMalformedResponseError, "not valid JSON"),
    "error_json_200": (ok("", raw='{"error": {"message": "upstream timed out"}}'), {}, JudgeMalformedResponseError,
                       "not a chat completion"),  # a gateway's error object under a 200
}


# faults made of waiting: seconds of wall time each, and a busy 2-core machine can stretch an
# answered retry past the short client timeout, so they run outside the fast tier and may spend
# a few extra attempts (never fewer: every distinct request still met its fault once)
TIMED = {"timeout", "hang"}


def _kinds(matrix: dict) -> list:
    return [pytest.param(k, marks=pytest.mark.slow) if k in TIMED else k for k in sorted(matrix)]


@pytest.mark.parametrize("kind", _kinds(FAULTS))
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


@pytest.mark.parametrize("kind", _kinds(FAULTS))
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


# ---- the same faults under a reward batch: nothing lost, never a 0 from an outage -------------
REWARD_FAULTS = {  # kind -> (faulty reply for a request `body`, judge overrides)
    "http_500": (lambda body: status(500), {}),
    "http_429": (lambda body: status(429, headers={"Retry-After": "0.1"}), {}),
    "reset": (lambda body: fault("reset"), {}),
    # timeouts generous enough that a retry answered at once is never cut on a loaded 2-core machine
    "timeout": (lambda body: {**echo(body), "delay": 4.0}, {"timeout_s": 1.5}),  # answers, too late
    "hang": (lambda body: fault("hang"), {"timeout_s": 1.5}),
    "html_200": (lambda body: fault("html"), {}),
    "truncated_json": (lambda body: fault("truncated"), {}),
}
JUDGE = {"transport_retries": 2, "backoff_initial_s": 0.01, "backoff_max_s": 0.05, "backoff_jitter_s": 0.0,
         "timeout_s": 10.0}


def _rollouts():
    from PIL import Image

    first = Image.new("RGB", (16, 16), "white")
    prompts = [[{"role": "user", "content": [{"type": "image", "image": first},
                                             {"type": "text", "text": "Find the cheapest flight"}]}]] * 2
    completions = [[{"role": "assistant", "content": "go", "tool_calls": [
                        {"type": "function", "function": {"name": "click", "arguments": {"x": j}}}]},
                    {"role": "tool", "name": "click",
                     "content": [{"type": "image", "image": Image.new("RGB", (16, 16), (40 * j, 0, 0))}]},
                    {"role": "assistant", "content": f"answer {j}"}] for j in range(2)]
    return prompts, completions


async def _rewards(url: str, judge: dict):
    from reward import clear_sessions, make_uv_rewards

    clear_sessions()
    uv = make_uv_rewards(judge_url=url, model="judge", judge={**JUDGE, **judge})
    extra: dict = {}
    try:
        proc, outc = await asyncio.gather(
            uv.process(*_rollouts()), uv.outcome(*_rollouts(), log_extra=lambda k, v: extra.setdefault(k, v)))
    finally:
        await uv.process.session.aclose()
        clear_sessions()
    return proc, outc, extra.get("uv_outcome/unscored_reason")


@pytest.fixture(scope="module")
def clean_rewards():
    """The rewards of the two rollouts against a judge that never fails (the echo judge's replies)."""
    from judge_server import ScriptedServer

    srv = ScriptedServer(default=echo).start()
    try:
        proc, outc, _ = asyncio.run(_rewards(srv.url, {}))
    finally:
        srv.stop()
    assert proc == [0.1, 0.1] and outc == [1.0, 1.0]  # echo: 0.5 of 5 points; evidence-less penalties ignored
    return proc, outc, len(srv.requests)


@pytest.mark.parametrize("kind", _kinds(REWARD_FAULTS))
async def test_every_call_failing_once_loses_nothing(server, clean_rewards, kind):
    """Each distinct request's first attempt meets the fault, its retry succeeds: the rewards are
    exactly those of a judge that never failed, and every call was retried exactly once (a timed
    fault may spend a few more attempts on a loaded machine, see TIMED)."""
    bad, overrides = REWARD_FAULTS[kind]
    seen: set[str] = set()

    def first_attempt_fails(body: dict):
        key = json.dumps(body["messages"], sort_keys=True)
        if key in seen:
            return echo(body)
        seen.add(key)
        return bad(body)

    server.default = first_attempt_fails
    proc, outc, _ = await _rewards(server.url, overrides)
    assert (proc, outc) == clean_rewards[:2]
    assert clean_rewards[2] == len(seen)  # the same distinct requests as against a clean judge
    extra = len(server.requests) - 2 * len(seen)
    assert extra == 0 or (kind in TIMED and 0 < extra <= len(seen) // 4), (kind, extra)


@pytest.mark.parametrize("kind", _kinds(REWARD_FAULTS))
async def test_a_judge_that_keeps_failing_gives_none_never_zero(server, kind):
    bad, overrides = REWARD_FAULTS[kind]
    server.default = bad
    proc, outc, reasons = await _rewards(server.url, overrides)
    assert proc == [None, None] and outc == [None, None]
    assert all(r.startswith("Judge") and "Error: [rubric]" in r for r in reasons), reasons


# ---- a flaky judge is not a dead one (issue 20 §5) ----------------------------------------------
#: The breaker as it was: open after 10 failures in a row (a window of 10, all failed), no stall rule.
STREAK_BREAKER = {"breaker_failures": 10, "breaker_window": 10, "breaker_failure_ratio": 1.0, "breaker_stalls": 0}
FLAKY_JUDGE = {"transport_retries": 4, "backoff_initial_s": 0.01, "backoff_max_s": 0.05, "backoff_jitter_s": 0.0,
               "timeout_s": 10.0}


def _many_rollouts(tasks: int, g: int):
    from PIL import Image

    prompts, completions = [], []
    for t in range(tasks):
        first = Image.new("RGB", (16, 16), (0, 0, 10 * t))
        for j in range(g):
            prompts.append([{"role": "user", "content": [
                {"type": "image", "image": first}, {"type": "text", "text": f"Find the cheapest flight to city {t}"}]}])
            completions.append([{"role": "assistant", "content": "go", "tool_calls": [
                                    {"type": "function", "function": {"name": "click", "arguments": {"x": j}}}]},
                                {"role": "tool", "name": "click",
                                 "content": [{"type": "image", "image": Image.new("RGB", (16, 16), (40 * j, t, 0))}]},
                                {"role": "assistant", "content": f"answer {j}"}])
    return prompts, completions


async def flaky_run(server, fault_rate: float, judge: dict, *, tasks: int = 6, g: int = 4, seed: int = 0):
    """Outcome rewards of tasks x g rollouts against a judge answering `fault_rate` of its requests
    with HTTP 500, counting a degraded verification as scored (as `score` does), and the breaker's
    final state."""
    import hashlib
    import json
    import random
    import threading

    from reward import clear_sessions, make_uv_rewards

    lock, tries = threading.Lock(), {}

    def sometimes_500(body: dict):
        # the draw depends on the request and its try number, not on the order concurrent requests
        # arrive in: the same requests fail on every run, however the machine is loaded
        key = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
        with lock:
            n = tries[key] = tries.get(key, 0) + 1
        bad = random.Random(f"{seed}:{key}:{n}").random() < fault_rate
        return status(500) if bad else echo(body)

    server.default = sometimes_500
    clear_sessions()
    uv = make_uv_rewards(judge_url=server.url, model="judge", judge={**FLAKY_JUDGE, **judge},
                         none_if_degraded=frozenset())
    try:
        outc = await uv.outcome(*_many_rollouts(tasks, g))
        state = uv.outcome.session.judge_for_loop()._pool.breakers[server.url].state
    finally:
        await uv.outcome.session.aclose()
        clear_sessions()
    return outc, state


#: Fault draws checked by the flaky-judge test: without ``flaky_retries`` (5 attempts a call) both
#: scored under 80% of their 24 rollouts (17-19 and 15 of 24); flaky_figures.py prints seeds 0-9.
FLAKY_SEEDS = (0, 9)


@pytest.mark.slow  # ~10-35 s by load: 2 x 24 rollouts, ~1100 judge requests, then a dead judge
async def test_a_flaky_judge_keeps_most_rollouts_scored_with_no_wrong_verdict(server):
    """60% of requests answered 500: retries recover most calls (more of them while the judge is
    seen answering, ``flaky_retries``), and the breaker, which tells flaky from down, stays closed,
    so at least 80% of rollouts are scored under each of several fault draws; every verdict equals
    the clean judge's (an outage never becomes a verdict). tests/judge/flaky_figures.py prints the
    whole curve, with and without flaky retries, and for the old streak breaker."""
    for seed in FLAKY_SEEDS:  # 6 tasks x 4: a lost rubric costs 4 rollouts of 24
        outc, state = await flaky_run(server, 0.6, {}, tasks=6, seed=seed)
        assert sum(o is not None for o in outc) >= 0.8 * len(outc), (seed, outc)
        assert {o for o in outc if o is not None} == {1.0}  # the echo judge's verdict, never a 0 from an outage
        assert state == "closed"
    outc, state = await flaky_run(server, 1.0, {})  # down: every request fails, the circuit opens
    assert outc == [None] * len(outc) and state == "open"
