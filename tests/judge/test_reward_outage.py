"""Reward batches against a real loopback judge that hangs, is down, and comes back (issue 14,
defect 7): the time to all-None is bounded by the batch deadline or the circuit breaker, later
batches fail fast without asking the dead judge, and once it answers again the rewards are floats
(the same floats as against a judge that never failed)."""
from __future__ import annotations

import asyncio
import time

import pytest
from judge_server import echo, fault, status
from PIL import Image

# imported up front: a first import inside a timed batch blocks the loop for a second on a busy CPU
import verifier.judge.openai_compat
import verifier.pipeline  # noqa: F401
from reward import clear_sessions, make_uv_rewards

FAST = {"backoff_initial_s": 0.01, "backoff_max_s": 0.05, "backoff_jitter_s": 0.0, "max_concurrency": 16}


@pytest.fixture(autouse=True)
def _sessions():
    clear_sessions()
    yield
    clear_sessions()


def rollouts(tag: str, tasks: int = 2, g: int = 3):
    """G text-answer rollouts per task (each one screenshot), distinct per `tag`."""
    prompts, completions = [], []
    for t in range(tasks):
        for j in range(g):
            prompts.append([{"role": "user", "content": [{"type": "image", "image": Image.new("RGB", (8, 8), "white")},
                                                         {"type": "text", "text": f"Task {t}: find the price"}]}])
            completions.append([{"role": "assistant", "content": f"{tag}: the price is {j}"}])
    return prompts, completions


def uv(url: str, *, judge: dict, **settings):
    return make_uv_rewards(judge_url=url, model="judge", judge={**FAST, **judge}, **settings)


async def timed(reward, prompts, completions, **kw):
    start = time.monotonic()
    out = await reward(prompts, completions, **kw)
    return out, time.monotonic() - start


async def test_hanging_judge_is_cut_by_the_batch_deadline(server):
    """A judge that accepts and never answers, no breaker, 60 s per request and 5 tries (~300 s
    without a deadline): the batch ends within its 1.5 s deadline (its first judge call gets a third
    of it, see JudgeConfig.call_deadline_share), every reward None with the reason."""
    server.default = fault("hang")
    r = uv(server.url, judge={"timeout_s": 60.0, "transport_retries": 4, "breaker_failures": 0},
           batch_deadline_s=1.5)
    extra, metrics = {}, {}
    prompts, completions = rollouts("hang")
    (proc, outc), took = await timed(lambda p, c: asyncio.gather(
        r.process(p, c), r.outcome(p, c, log_extra=lambda k, v: extra.setdefault(k, v),
                                   log_metric=lambda k, v: metrics.setdefault(k, v))), prompts, completions)
    assert proc == [None] * 6 and outc == [None] * 6
    assert 0.4 <= took < 3.0, took
    assert all(v.startswith(("JudgeDeadlineError: deadline passed", "JudgeUnavailableError: [rubric]"))
               and ("timeout" in v or "deadline" in v) for v in extra["uv_outcome/unscored_reason"])
    assert extra["uv_outcome/outcome_reasoning"] == [None] * 6
    assert metrics["uv_outcome/judge_unavailable_rate"] == 1.0 and metrics["uv_outcome/failure_rate"] == 1.0
    assert r.process.session.runs == 6  # one verification per rollout, shared by both rewards
    await r.process.session.aclose()


async def test_verification_deadline_bounds_each_rollout(server):
    server.default = fault("hang")
    r = uv(server.url, judge={"timeout_s": 60.0, "breaker_failures": 0}, batch_deadline_s=None,
           verify_deadline_s=0.8)
    (out, took) = await timed(r.outcome, *rollouts("verify", tasks=1, g=2))
    assert out == [None, None] and 0.2 <= took < 2.5, took  # the rubric's share of 0.8 s, or all of it
    await r.outcome.session.aclose()


@pytest.mark.parametrize("outage", ["hang", "down"])
async def test_breaker_fails_fast_while_down_and_rewards_return_with_the_judge(server, server2, outage):
    # the same rollouts against a judge that never failed: the floats to expect after recovery
    server2.default = echo
    healthy = uv(server2.url, judge={"timeout_s": 5.0})
    expected = await healthy.process(*rollouts("after"))
    assert expected == [0.1] * 6  # the echo judge: 0.5 of 5 points, evidence-less penalties ignored
    await healthy.process.session.aclose()

    server.default = fault("hang") if outage == "hang" else status(503)
    # The two tasks' first requests fail a few ms apart (more on a loaded machine): a backoff longer
    # than that keeps a retry from slipping in before the second failure opens the circuit. The
    # timeout leaves the recovered judge's burst of replies room on a loaded 2-core machine.
    r = uv(server.url, judge={"timeout_s": 0.8, "transport_retries": 4, "breaker_failures": 2,
                              "breaker_cooldown_s": 1.0, "backoff_initial_s": 0.2, "backoff_max_s": 0.2},
           batch_deadline_s=30.0)
    first, took_first = await timed(r.process, *rollouts("wave1"))
    asked = len(server.requests)
    assert first == [None] * 6 and took_first < 2.8, took_first  # 2 failures open it, not 5 tries x 0.8 s
    # the two tasks' rubric calls, once each: then the circuit opened (on a loaded machine one
    # retry may leave before the second failure is counted: a race the breaker cannot close)
    assert 2 <= asked <= 3, asked
    second, took_second = await timed(r.process, *rollouts("wave2"))
    assert second == [None] * 6 and took_second < 1.0, took_second
    assert len(server.requests) == asked  # fail fast: the dead judge was not asked again

    server.default = echo  # the judge is back; after the cool-down one probe closes the circuit
    await asyncio.sleep(1.05)
    third = await r.process(*rollouts("after"))
    assert third == expected
    await r.process.session.aclose()


async def test_deadline_cut_requests_teach_the_breaker(server):
    """The deadline reaches the HTTP timeout of every request, so a request cut by the batch
    deadline counts as a timeout for the breaker: the next batch fails fast without asking."""
    server.default = fault("hang")
    r = uv(server.url, judge={"timeout_s": 60.0, "breaker_failures": 2, "breaker_cooldown_s": 30.0},
           batch_deadline_s=1.0)
    first, took_first = await timed(r.outcome, *rollouts("wave1"))
    assert first == [None] * 6 and took_first < 2.8 and len(server.requests) == 2
    second, took_second = await timed(r.outcome, *rollouts("wave2"))
    assert second == [None] * 6 and took_second < 1.0 and len(server.requests) == 2
    await r.outcome.session.aclose()
