"""Transport layer against real loopback servers: retries, Retry-After, timeouts, refused
connections, non-retryable errors, the per-endpoint concurrency limit, replicas and event loops."""
from __future__ import annotations

import asyncio
import json
import logging
import threading

import pytest
from judge_server import fast_config, ok, status
from pydantic import BaseModel, Field

from verifier.errors import JudgeError, JudgeMalformedResponseError, JudgeUnavailableError
from verifier.judge import Message, make_judge

VALID = json.dumps({"ok": True, "why": "fine"})


class Answer(BaseModel):
    ok: bool
    why: str = Field(max_length=50)


MSGS = [Message.system("You are a judge."), Message.user("Is it done?")]


async def test_http_500_then_ok_is_retried(server):
    server.push(status(500), ok(VALID))
    judge = make_judge(fast_config(server.url))
    reply = await judge.complete(MSGS, Answer, stage="outcome")
    assert reply.parsed.ok is True and reply.model == "served-judge"
    assert len(server.requests) == 2
    assert reply.usage.attempts == 2
    assert reply.usage.prompt_tokens == 10 and reply.usage.completion_tokens == 5  # only the 200 counts
    await judge.aclose()


async def test_429_honours_retry_after(server):
    server.push(status(429, headers={"Retry-After": "0.4"}), ok(VALID))
    judge = make_judge(fast_config(server.url, backoff_initial_s=0.001, backoff_jitter_s=0.0))
    reply = await judge.complete(MSGS, Answer, stage="outcome")
    assert reply.usage.attempts == 2
    gap = server.requests[1].t - server.requests[0].t
    assert gap >= 0.38  # the header, not the 1 ms backoff, set the wait
    await judge.aclose()


async def test_5xx_exhausted_raises_unavailable_with_usage(server, caplog):
    server.default = status(503)
    judge = make_judge(fast_config(server.url, transport_retries=3))
    with caplog.at_level(logging.WARNING, logger="cua_verifier.judge"), \
            pytest.raises(JudgeUnavailableError) as err:
        await judge.complete(MSGS, Answer, stage="rubric")
    assert len(server.requests) == 4
    assert err.value.usage.attempts == 4 and err.value.stage == "rubric"
    assert "HTTP 503" in str(err.value)
    assert caplog.text.count("judge transport error") == 3  # one warning per retry
    await judge.aclose()


async def test_retries_walk_the_backoff_ladder_and_number_their_attempts(server, caplog):
    """The first attempt runs outside the retry loop, later ones inside it: the warnings still
    count 1..N of the limit, and the waits still double from the first failure on."""
    import re

    server.default = status(503)
    judge = make_judge(fast_config(server.url, transport_retries=3, backoff_initial_s=0.05,
                                   backoff_jitter_s=0.0, backoff_max_s=10.0))
    with caplog.at_level(logging.WARNING, logger="cua_verifier.judge"), pytest.raises(JudgeUnavailableError):
        await judge.complete(MSGS, Answer, stage="rubric")
    said = re.findall(r"attempt (\d+)/(\d+)\): .*; retrying in ([0-9.]+)s", caplog.text)
    assert said == [("1", "4", "0.05"), ("2", "4", "0.10"), ("3", "4", "0.20")]
    gaps = [b.t - a.t for a, b in zip(server.requests, server.requests[1:])]
    assert len(gaps) == 3 and gaps[0] >= 0.045 and gaps[1] >= 0.095 and gaps[2] >= 0.19
    await judge.aclose()


async def test_a_call_that_succeeds_at_once_builds_no_retry_loop(server, monkeypatch):
    """Nearly every call succeeds on its first attempt: it pays for no retry machinery."""
    from verifier.judge import ladder

    def no_loop(*args, **kwargs):
        raise AssertionError("a retry loop was built for a call that needed none")

    monkeypatch.setattr(ladder, "AsyncRetrying", no_loop)
    server.push(ok(VALID))
    judge = make_judge(fast_config(server.url))
    reply = await judge.complete(MSGS, Answer, stage="outcome")
    assert reply.parsed.ok is True and reply.usage.attempts == 1
    await judge.aclose()


async def test_slow_server_times_out_and_is_retried(server):
    server.default = ok(VALID, delay=1.5)
    judge = make_judge(fast_config(server.url, timeout_s=0.2, transport_retries=1))
    with pytest.raises(JudgeUnavailableError, match="timeout") as err:
        await judge.complete(MSGS, Answer, stage="outcome")
    assert len(server.requests) == 2 and err.value.usage.attempts == 2
    await judge.aclose()


async def test_connection_refused_raises_unavailable(unused_url):
    judge = make_judge(fast_config(unused_url, transport_retries=2))
    with pytest.raises(JudgeUnavailableError, match="connection error") as err:
        await judge.complete(MSGS, Answer, stage="outcome")
    assert err.value.usage.attempts == 3
    await judge.aclose()


async def test_refused_replica_fails_over_to_the_live_one(server, unused_url):
    server.default = ok(VALID)
    judge = make_judge(fast_config(unused_url, server.url, transport_retries=1))
    replies = await asyncio.gather(*(judge.complete(MSGS, Answer, stage="s") for _ in range(6)))
    assert all(r.parsed.ok for r in replies)
    assert len(server.requests) == 6
    await judge.aclose()


async def test_client_errors_are_not_retried(server):
    server.default = status(400)
    judge = make_judge(fast_config(server.url))
    with pytest.raises(JudgeError, match="HTTP 400.*json_object") as err:
        await judge.complete(MSGS, Answer, stage="outcome")
    assert not isinstance(err.value, JudgeUnavailableError)
    assert len(server.requests) == 1
    await judge.aclose()


async def test_concurrency_limit_per_endpoint(server):
    server.default = ok(VALID, delay=0.15)
    judge = make_judge(fast_config(server.url, max_concurrency=3))
    await asyncio.gather(*(judge.complete(MSGS, Answer, stage="s") for _ in range(10)))
    assert len(server.requests) == 10
    assert server.max_in_flight == 3
    await judge.aclose()


async def test_load_is_spread_over_replicas(server, server2):
    for srv in (server, server2):
        srv.default = ok(VALID, delay=0.05)
    judge = make_judge(fast_config(server.url, server2.url, max_concurrency=2))
    await asyncio.gather(*(judge.complete(MSGS, Answer, stage="s") for _ in range(12)))
    assert len(server.requests) + len(server2.requests) == 12
    assert len(server.requests) >= 4 and len(server2.requests) >= 4
    assert server.max_in_flight <= 2 and server2.max_in_flight <= 2
    # sequential calls rotate too (no in-flight difference to break the tie)
    before = len(server.requests), len(server2.requests)
    for _ in range(4):
        await judge.complete(MSGS, Answer, stage="s")
    assert len(server.requests) - before[0] == 2 and len(server2.requests) - before[1] == 2
    await judge.aclose()


def test_one_judge_serves_several_event_loops(server):
    """asyncio.run twice (offline scoring) and a daemon-thread loop (TRL) with one judge object."""
    server.default = ok(VALID)
    judge = make_judge(fast_config(server.url))

    async def once():
        return (await judge.complete(MSGS, Answer, stage="s")).parsed.ok

    assert asyncio.run(once()) and asyncio.run(once())
    results = []
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        results.append(asyncio.run_coroutine_threadsafe(once(), loop).result(timeout=10))
        results.append(asyncio.run_coroutine_threadsafe(once(), loop).result(timeout=10))
        asyncio.run_coroutine_threadsafe(judge.aclose(), loop).result(timeout=10)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        loop.close()
    assert results == [True, True] and len(server.requests) == 4
    assert len(judge._pool._pools) == 0  # pools of finished loops are not kept


async def test_api_key_sent_in_header_but_never_logged(server, monkeypatch, caplog):
    monkeypatch.setenv("CUA_JUDGE_API_KEY", "sk-loopback-secret")
    server.push(status(500), ok("nope"), ok(VALID))
    judge = make_judge(fast_config(server.url))
    with caplog.at_level(logging.DEBUG):  # every logger, including the SDK's and the HTTP client's
        await judge.complete(MSGS, Answer, stage="s")
    assert {r.headers["authorization"] for r in server.requests} == {"Bearer sk-loopback-secret"}
    assert "judge call stage=s" in caplog.text  # the debug line per call exists...
    assert "sk-loopback-secret" not in caplog.text  # ...and nothing logged the key
    await judge.aclose()


async def test_non_json_http_body_is_retried_then_a_typed_error(server):
    """A JSON-typed 200 that is not JSON is a transport fault: retried, then a typed error
    (test_faults.py covers the HTML-typed page and truncated JSON)."""
    server.default = ok("", raw="<html>login page of some proxy</html>")
    judge = make_judge(fast_config(server.url))
    with pytest.raises(JudgeMalformedResponseError, match="malformed HTTP response") as err:
        await judge.complete(MSGS, Answer, stage="outcome")
    assert err.value.usage.attempts == 3 and len(server.requests) == 3
    await judge.aclose()
