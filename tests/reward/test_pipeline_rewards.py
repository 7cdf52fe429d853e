"""Rewards over the REAL pipeline (verifier.pipeline.verify) with a ScriptedJudge: request counts."""
from __future__ import annotations

import asyncio

import reward_fakes
from PIL import Image

from reward import RewardSettings, clear_sessions, make_uv_rewards
from verifier.errors import JudgeUnavailableError
from verifier.testing import ScriptedJudge


def rewards(script=None, **kw):
    reward_fakes.SCRIPTED = ScriptedJudge(script)
    return make_uv_rewards(RewardSettings(judge_factory=reward_fakes.scripted_judge, strict=True, **kw))


def group(task: str, g: int, *, shared_screen: bool = True):
    """G rollouts of one prompt; each clicks a different number of times; screens after each click."""
    prompts, completions = [], []
    for j in range(g):
        first = Image.new("RGB", (8, 8), "white")
        prompts.append([{"role": "user", "content": [{"type": "image", "image": first},
                                                     {"type": "text", "text": task}]}])
        msgs = []
        for k in range(j + 1):
            msgs.append({"role": "assistant", "content": f"step {k}", "tool_calls": [
                {"type": "function", "function": {"name": "click", "arguments": {"x": k}}}]})
            color = (10 * k, 0, 0) if shared_screen else (10 * k, 10 * j, 0)
            msgs.append({"role": "tool", "name": "click",
                         "content": [{"type": "image", "image": Image.new("RGB", (8, 8), color)}]})
        msgs.append({"role": "assistant", "content": f"answer {j}"})
        completions.append(msgs)
    return prompts, completions


async def test_process_and_outcome_share_one_pipeline_run_per_rollout():
    r = rewards()
    prompts, completions = group("Find the cheapest flight", 4)
    proc, outc = await asyncio.gather(r.process(prompts, completions), r.outcome(prompts, completions))
    judge = reward_fakes.SCRIPTED
    assert outc == [1.0] * 4 and proc == [1.0] * 4  # the scripted rescoring gives every criterion full marks
    assert len(judge.requests_for("outcome")) == 4  # one outcome call per rollout, not per reward
    assert len(judge.requests_for("rubric")) == 1  # group awareness: one rubric for the G rollouts
    assert r.process.session.runs == 4


async def test_rubric_once_per_task_across_groups_and_identical_screens_analysed_once():
    r = rewards()
    p1, c1 = group("Task one", 3)
    p2, c2 = group("Task two", 3)
    await r.outcome(p1 + p2, c1 + c2)
    judge = reward_fakes.SCRIPTED
    assert len(judge.requests_for("rubric")) == 2
    # each task's 3 rollouts show 2 + 3 + 4 = 9 screenshots but only 4 distinct ones (white initial
    # page, then the k-th screen): relevance rows are cached per (task, rubric, image hash), so 4 rows
    # serve each task's 9 screenshots. The scripted rubric is the same for both tasks, yet each task's
    # rows are asked with its own text: before, task two reused rows asked with task one's words
    # (whichever came first), 4 requests in all
    relevance = judge.requests_for("relevance")
    assert len(relevance) == 8
    for task in ("Task one", "Task two"):
        assert sum(task in judge.text(q) for q in relevance) == 4, task


async def test_rubric_failure_gives_none_for_every_rollout_and_logs_failure_rate():
    r = rewards({"rubric": JudgeUnavailableError("connection refused", stage="rubric")})
    metrics = {}
    prompts, completions = group("Find the cheapest flight", 3)
    out = await r.outcome(prompts, completions, log_metric=lambda k, v: metrics.setdefault(k, v))
    assert out == [None, None, None]
    assert metrics["uv_outcome/failure_rate"] == 1.0


async def test_outcome_failure_verdict_is_zero_not_none():
    r = rewards({"outcome": {"primary_intent": "x", "reasoning": "wrong flight", "success": False}})
    prompts, completions = group("Find the cheapest flight", 2)
    extra = {}
    out = await r.outcome(prompts, completions, log_extra=lambda c, v: extra.setdefault(c, v))
    assert out == [0.0, 0.0]
    assert extra["uv_outcome/outcome_reasoning"] == ["wrong flight", "wrong flight"]


def _closed_port_url() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


async def test_real_judge_client_unreachable_gives_none_and_failure_rate(monkeypatch):
    """The real OpenAI-compatible client, nothing listening: JudgeUnavailableError -> None, not 0."""
    monkeypatch.setenv("CUA_JUDGE_API_KEY", "unused")
    uv = make_uv_rewards(judge_url=_closed_port_url(), model="judge",
                         judge={"timeout_s": 2.0, "transport_retries": 1, "backoff_initial_s": 0.01,
                                "backoff_max_s": 0.02, "backoff_jitter_s": 0.0})
    metrics: dict = {}
    prompts, completions = group("Find the cheapest flight", 2)
    proc, outc = await asyncio.gather(
        uv.process(prompts, completions, log_metric=lambda k, v: metrics.setdefault(k, v)),
        uv.outcome(prompts, completions, log_metric=lambda k, v: metrics.setdefault(k, v)))
    assert proc == [None, None] and outc == [None, None]
    assert metrics["uv_process/failure_rate"] == 1.0 and metrics["uv_outcome/failure_rate"] == 1.0
    assert uv.process.session.runs == 2  # still one pipeline run per rollout for both rewards
    await uv.process.session.aclose()


async def test_module_level_instances_read_env_and_share_one_session(monkeypatch, tmp_path):
    import json

    import reward

    cfg = tmp_path / "uv.json"
    cfg.write_text(json.dumps({"judge_factory": "reward_fakes.scripted_judge"}))
    monkeypatch.setenv("CUA_VERIFIER_CONFIG", str(cfg))
    reward_fakes.SCRIPTED = ScriptedJudge()
    for f in (reward.uv_process, reward.uv_outcome):
        monkeypatch.setattr(f, "_session", None)  # forget sessions other tests may have built
    prompts, completions = group("Find the cheapest flight", 3)
    await asyncio.gather(reward.uv_process(prompts, completions), reward.uv_outcome(prompts, completions))
    assert reward.uv_process.session is reward.uv_outcome.session
    assert len(reward_fakes.SCRIPTED.requests_for("outcome")) == 3


async def test_failed_side_effects_or_rescoring_give_none_not_a_float():
    for stage in ("side_effects", "rescoring"):
        clear_sessions()
        r = rewards({stage: JudgeUnavailableError("down", stage=stage)})
        prompts, completions = group(f"Task {stage}", 2)
        assert await r.process(prompts, completions) == [None, None]
        assert await r.outcome(prompts, completions) == [None, None]
    clear_sessions()
    r = rewards({"side_effects": JudgeUnavailableError("down", stage="side_effects")}, none_if_degraded=[])
    prompts, completions = group("Task lenient", 2)
    assert await r.outcome(prompts, completions) == [1.0, 1.0]


async def test_outage_in_most_votes_is_none_not_a_zero_reward():
    """V=3 and the outcome votes of every rollout go [failed, failed, yes]: the old majority counted
    the failures as no and returned outcome 0.0; an outage is not a verdict, so every reward is None
    and the reason is in the logged columns."""
    answers: dict[str, list] = {}

    def vote(messages, _o):  # per rollout (its final answer is in the prompt): fail, fail, yes
        text = "\n".join(getattr(p, "text", "") for m in messages for p in m.content)
        key = next(a for a in ("answer 0", "answer 1") if a in text)
        got = answers.setdefault(key, [])
        got.append(None)
        if len(got) < 3:
            return JudgeUnavailableError("connection refused", stage="outcome")
        return {"primary_intent": "p", "reasoning": "yes", "success": True}

    r = rewards({"outcome": vote}, verifier={"votes": 3})
    prompts, completions = group("Find the cheapest flight", 2)
    extra: dict = {}
    metrics: dict = {}
    proc, outc = await asyncio.gather(
        r.process(prompts, completions), r.outcome(prompts, completions, log_extra=lambda c, v: extra.setdefault(c, v),
                                                   log_metric=lambda k, v: metrics.setdefault(k, v)))
    assert outc == [None, None] and proc == [None, None]
    assert {len(v) for v in answers.values()} == {3}  # three votes asked per rollout, once for both rewards
    assert all(v.startswith("JudgeUndecidedError: [outcome] only 1 of 3 outcome votes are valid")
               for v in extra["uv_outcome/unscored_reason"])
    assert metrics["uv_outcome/failure_rate"] == 1.0
