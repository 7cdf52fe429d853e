"""Reward functions against a fake `verify`: contract, None on failure, single flight, pickling."""
from __future__ import annotations

import asyncio
import pickle

import pytest
import reward_fakes
from trl.trainer.utils import get_callable_name, is_async_callable

from reward import (
    RewardSettings,
    UVCombinedReward,
    UVOutcomeReward,
    UVProcessReward,
    clear_sessions,
    make_uv_rewards,
    uv_outcome,
    uv_process,
)
from verifier.errors import ConfigError


def settings(**kw) -> RewardSettings:
    return RewardSettings(verify_fn=reward_fakes.fake_verify, judge_factory=reward_fakes.fake_judge,
                          cache_factory=None, strict=True, **kw)


def batch(n_tasks=2, g=3):
    """G rollouts per task; rollout j makes j+1 tool calls and answers."""
    prompts, completions, task_ids = [], [], []
    for t in range(n_tasks):
        for j in range(g):
            prompts.append([{"role": "user", "content": f"Book flight number {t}"}])
            calls = [{"type": "function", "function": {"name": "click", "arguments": {"x": k}}}
                     for k in range(j + 1)]
            completions.append([{"role": "assistant", "content": "thinking", "tool_calls": calls},
                                {"role": "tool", "name": "click", "content": "ok"},
                                {"role": "assistant", "content": f"done {j}"}])
            task_ids.append(f"task-{t}")
    return prompts, completions, task_ids


class Recorder:
    def __init__(self):
        self.metrics, self.extra = {}, {}

    def log_metric(self, name, value):
        self.metrics.setdefault(name, []).append(value)

    def log_extra(self, column, values):
        assert column not in self.extra, f"column {column} logged twice"
        self.extra[column] = values


def test_trl_sees_async_callables_with_stable_names():
    for func, name in ((uv_process, "uv_process"), (uv_outcome, "uv_outcome"),
                       (UVCombinedReward(), "uv_combined")):
        assert is_async_callable(func)
        assert get_callable_name(func) == name
    assert get_callable_name(UVProcessReward(name="uv_process_v2")) == "uv_process_v2"


async def test_values_lengths_and_one_run_per_rollout_for_both_rewards():
    p, o = UVProcessReward(settings()), UVOutcomeReward(settings())
    prompts, completions, task_ids = batch()
    rec = Recorder()
    kw = {"task_id": task_ids, "log_metric": rec.log_metric, "log_extra": rec.log_extra}
    proc, outc = await asyncio.gather(p(prompts, completions, **kw), o(prompts, completions, **kw))
    assert proc == pytest.approx([0.1, 0.2, 0.3] * 2)  # fake score = steps / 10; rollout j has j+1 clicks
    assert outc == [1.0] * 6
    assert len(reward_fakes.CALLS) == 6  # both rewards attached, one verification per rollout
    assert rec.metrics["uv/judge_calls_per_rollout"] == [4.0, 4.0]
    assert rec.metrics["uv_process/failure_rate"] == [0.0]
    assert rec.extra["uv_outcome/outcome_reasoning"][0] == "answer='done 0'"
    assert rec.extra["uv_process/first_failure_step"] == [2] * 6


async def test_sequential_second_reward_reuses_finished_verification():
    p, o = make_uv_rewards(settings())[:2]
    prompts, completions, task_ids = batch(1, 2)
    await p(prompts, completions, task_id=task_ids)
    await o(prompts, completions, task_id=task_ids)
    assert len(reward_fakes.CALLS) == 2


async def test_failure_is_none_not_zero_and_metric_logged():
    reward_fakes.FAIL_TASKS.add("task-1")
    rec = Recorder()
    prompts, completions, task_ids = batch()
    out = await UVOutcomeReward(settings())(prompts, completions, task_id=task_ids,
                                            log_metric=rec.log_metric, log_extra=rec.log_extra)
    assert out[:3] == [1.0] * 3 and out[3:] == [None] * 3
    assert rec.metrics["uv_outcome/failure_rate"] == [0.5]
    assert rec.extra["uv_outcome/outcome_reasoning"][3] is None  # columns keep one type (parquet)
    assert rec.extra["uv_outcome/unscored_reason"][3].startswith("JudgeUnavailableError")
    assert rec.extra["uv_outcome/unscored_reason"][0] is None


async def test_failed_rollout_is_retried_after_ttl():
    reward_fakes.FAIL_TASKS.add("task-0")
    f = UVOutcomeReward(settings(failure_ttl_s=0.0))
    prompts, completions, task_ids = batch(1, 1)
    assert await f(prompts, completions, task_id=task_ids) == [None]
    reward_fakes.FAIL_TASKS.clear()
    assert await f(prompts, completions, task_id=task_ids) == [1.0]
    assert len(reward_fakes.CALLS) == 2


async def test_bad_row_is_none_only_for_that_row():
    prompts, completions, _ = batch(1, 2)
    prompts[1] = [{"role": "system", "content": "no user message"}]
    assert await UVOutcomeReward(settings())(prompts, completions) == [1.0, None]


async def test_pickle_round_trip_then_call():
    f = pickle.loads(pickle.dumps(UVProcessReward(settings())))
    assert f._session is None and get_callable_name(f) == "uv_process"
    prompts, completions, task_ids = batch(1, 1)
    assert await f(prompts, completions, task_id=task_ids) == [pytest.approx(0.1)]
    g = pickle.loads(pickle.dumps(f))  # after use too: the session is dropped, not pickled
    assert await g(prompts, completions, task_id=task_ids) == [pytest.approx(0.1)]


async def test_combined_weights_process_and_outcome():
    f = UVCombinedReward(settings(combined_process_weight=0.25))
    prompts, completions, task_ids = batch(1, 1)
    assert await f(prompts, completions, task_id=task_ids) == [pytest.approx(0.25 * 0.1 + 0.75)]


def test_env_configuration_read_lazily(monkeypatch, tmp_path):
    cfg = tmp_path / "uv.json"
    cfg.write_text('{"max_concurrency": 3, "judge": {"timeout_s": 30}, "verifier": {"votes": 3}}')
    monkeypatch.setenv("CUA_VERIFIER_CONFIG", str(cfg))
    monkeypatch.setenv("CUA_JUDGE_URL", "http://a:8000/v1, http://b:8000/v1")
    monkeypatch.setenv("CUA_JUDGE_MODEL", "judge")
    s = RewardSettings.from_env()
    assert s.max_concurrency == 3 and s.verifier == {"votes": 3}
    assert s.judge == {"timeout_s": 30, "base_urls": ["http://a:8000/v1", "http://b:8000/v1"],
                       "model": "judge"}
    monkeypatch.setenv("CUA_VERIFIER_CONFIG", str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError):
        RewardSettings.from_env()


async def test_missing_judge_config_fails_loudly(monkeypatch):
    for var in ("CUA_JUDGE_URL", "CUA_JUDGE_MODEL", "CUA_VERIFIER_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    f = UVOutcomeReward(RewardSettings(verify_fn=reward_fakes.fake_verify, cache_factory=None))
    prompts, completions, _ = batch(1, 1)
    with pytest.raises(ConfigError, match="CUA_JUDGE_URL"):
        await f(prompts, completions)


async def test_concurrency_is_bounded():
    active = peak = 0

    async def counting(trajectory, config=None, *, judge, cache=None):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return await reward_fakes.fake_verify(trajectory, config, judge=judge, cache=cache)

    f = UVOutcomeReward(settings(max_concurrency=2).model_copy(update={"verify_fn": counting}))
    prompts, completions, task_ids = batch(3, 3)
    await f(prompts, completions, task_id=task_ids)
    assert peak == 2 and len(reward_fakes.CALLS) == 9


def test_loops_do_not_share_loop_bound_state():
    f = UVOutcomeReward(settings())
    prompts, completions, task_ids = batch(1, 1)
    assert asyncio.run(f(prompts, completions, task_id=task_ids)) == [1.0]
    prompts2, completions2, _ = batch(1, 2)
    assert asyncio.run(f(prompts2, completions2, task_id=["other"] * 2)) == [1.0, 1.0]


def test_trl_daemon_loop_then_asyncio_run_each_get_their_own_judge():
    from trl.trainer.utils import start_event_loop_in_daemon

    f = UVOutcomeReward(settings())
    prompts, completions, task_ids = batch(1, 2)
    _thread, loop, ready = start_event_loop_in_daemon(name="rewards")
    ready.wait()
    try:  # how GRPOTrainer runs async rewards: on its own long-lived loop in a daemon thread
        fut = asyncio.run_coroutine_threadsafe(f(prompts, completions, task_id=task_ids), loop)
        assert fut.result(timeout=10) == [1.0, 1.0]
    finally:
        loop.call_soon_threadsafe(loop.stop)
    prompts2, completions2, _ = batch(1, 1)  # then on another loop (offline scoring): no loop-bound reuse
    assert asyncio.run(f(prompts2, completions2, task_id=["other"])) == [1.0]  # fake_verify asserts the loop


async def test_unexpected_exception_is_none_unless_strict(caplog):
    prompts, completions, task_ids = batch(1, 1)
    lenient = settings().model_copy(update={"verify_fn": reward_fakes.broken_verify, "strict": False})
    assert await UVOutcomeReward(lenient)(prompts, completions, task_id=task_ids) == [None]
    assert "unexpected error" in caplog.text
    clear_sessions()
    strict = settings().model_copy(update={"verify_fn": reward_fakes.broken_verify})
    with pytest.raises(ZeroDivisionError):
        await UVOutcomeReward(strict)(prompts, completions, task_id=task_ids)


def test_pickled_reward_runs_in_a_spawned_process_like_async_grpo():
    import multiprocessing as mp

    r = make_uv_rewards(settings())
    with mp.get_context("spawn").Pool(1) as pool:  # no trainer kwargs: AsyncGRPO passes none
        assert pool.apply(reward_fakes.call_in_child, (pickle.dumps(r.outcome),)) == [1.0, 1.0]
        proc = pool.apply(reward_fakes.call_in_child, (pickle.dumps(r.process),))
    assert proc == [0.0, 0.0]  # no tool calls: 0 steps -> fake process score 0


async def test_strict_error_reaches_the_concurrent_second_reward_too():
    s = settings().model_copy(update={"verify_fn": reward_fakes.slow_broken_verify})
    p, o = UVProcessReward(s), UVOutcomeReward(s)
    prompts, completions, task_ids = batch(1, 1)
    results = await asyncio.gather(p(prompts, completions, task_id=task_ids),
                                   o(prompts, completions, task_id=task_ids), return_exceptions=True)
    assert [type(r) for r in results] == [ZeroDivisionError, ZeroDivisionError]
    assert reward_fakes.CALLS == ["task-0"]  # one run; the follower got the owner's error, not a rerun


async def test_unreadable_screenshot_is_none_for_that_row_only():
    prompts, completions, task_ids = batch(1, 2)
    completions[1][1]["content"] = [{"type": "image", "image": "data:image/png;base64,@@not-base64@@"}]
    out = await UVOutcomeReward(settings())(prompts, completions, task_id=task_ids)
    assert out == [1.0, None]


def test_factory_settings_and_comma_separated_urls():
    uv = make_uv_rewards(judge_url="http://a/v1, http://b/v1", model="m", max_concurrency=3,
                         verifier={"votes": 3})
    assert uv.process.settings is uv.outcome.settings is uv.combined.settings
    assert uv.outcome.settings.judge == {"base_urls": ["http://a/v1", "http://b/v1"], "model": "m"}
    assert uv.outcome.settings.max_concurrency == 3 and uv.outcome.settings.verifier == {"votes": 3}


async def test_invalid_judge_or_verifier_settings_are_config_errors():
    prompts, completions, _ = batch(1, 1)
    with pytest.raises(ConfigError, match="verifier settings"):
        await UVOutcomeReward(RewardSettings(judge_factory=reward_fakes.fake_judge, verifier={"votes": 2}))(
            prompts, completions)
    with pytest.raises(ConfigError, match="judge settings"):
        await UVOutcomeReward(judge_url="http://a/v1", model="m", judge={"max_concurrency": -1})(
            prompts, completions)


async def test_degraded_stage_in_none_if_degraded_gives_none_and_counts_as_failure():
    async def degraded_verify(trajectory, config=None, *, judge, cache=None):
        res = await reward_fakes.fake_verify(trajectory, config, judge=judge, cache=cache)
        stage = {"task-0": "side_effects", "task-1": "relevance"}[trajectory.task.id]
        return {**res, "degraded": [{"stage": stage, "reason": "down"}]}
    rec = Recorder()
    prompts, completions, task_ids = batch()
    f = UVProcessReward(settings().model_copy(update={"verify_fn": degraded_verify}))
    out = await f(prompts, completions, task_id=task_ids, log_metric=rec.log_metric, log_extra=rec.log_extra)
    assert out[:3] == [None] * 3 and out[3:] == pytest.approx([0.1, 0.2, 0.3])  # relevance: mild
    assert rec.metrics["uv_process/failure_rate"] == [0.5]
    assert rec.metrics["uv_process/degraded_none_rate"] == [0.5]
    assert rec.extra["uv_process/first_failure_step"][0] is None
    assert rec.extra["uv_process/unscored_reason"][0] == "degraded side_effects"
    lenient = settings(none_if_degraded=[]).model_copy(update={"verify_fn": degraded_verify})
    assert None not in await UVProcessReward(lenient)(prompts, completions, task_id=task_ids)


def test_none_if_degraded_default_and_round_trip():
    s = RewardSettings()
    assert s.none_if_degraded == {"rescoring", "side_effects"}
    assert RewardSettings.model_validate(s.model_dump()).none_if_degraded == s.none_if_degraded
    assert pickle.loads(pickle.dumps(s)).fingerprint() == s.fingerprint()


async def test_result_without_process_score_gives_none_for_process_rewards_only():
    async def verdict_only(trajectory, config=None, *, judge, cache=None):
        res = await reward_fakes.fake_verify(trajectory, config, judge=judge, cache=cache)
        return {**res, "process_score": None, "process_success": None}
    s = settings().model_copy(update={"verify_fn": verdict_only})
    prompts, completions, task_ids = batch(1, 2)
    assert await UVProcessReward(s)(prompts, completions, task_id=task_ids) == [None, None]
    assert await UVCombinedReward(s)(prompts, completions, task_id=task_ids) == [None, None]
    assert await UVOutcomeReward(s)(prompts, completions, task_id=task_ids) == [1.0, 1.0]


@pytest.mark.parametrize("depth", [300, 1_200, 100_000])
async def test_deeply_nested_policy_arguments_give_none_for_that_row_only(depth):
    """Issue 14 defect 2 at the TRL boundary: the reward call returns (never raises), the deep row
    is None with its reason logged, the other rows are scored exactly as usual."""
    prompts, completions, task_ids = batch(1, 3)
    deep = '{"a": ' * depth + "1" + "}" * depth
    completions[1][0]["tool_calls"] = [{"type": "function", "function": {"name": "click", "arguments": deep}}]
    rec = Recorder()
    p, o = make_uv_rewards(settings())[:2]
    kw = {"task_id": task_ids, "log_metric": rec.log_metric, "log_extra": rec.log_extra}
    proc, outc = await asyncio.gather(p(prompts, completions, **kw), o(prompts, completions, **kw))
    assert proc == pytest.approx([0.1, None, 0.3]) and outc == [1.0, None, 1.0]
    assert len(reward_fakes.CALLS) == 2  # the deep row never reached the verifier
    assert rec.metrics["uv_process/invalid_input_rate"] == [pytest.approx(1 / 3)]
    assert rec.metrics["uv_process/judge_unavailable_rate"] == [0.0]
    reason = rec.extra["uv_outcome/unscored_reason"][1]
    assert reason.startswith("TrajectoryError:") and "nested deeper than 32 levels" in reason
    assert rec.extra["uv_outcome/outcome_reasoning"][1] is None and rec.extra["uv_outcome/unscored_reason"][0] is None


# ---- mutants that survived the suite (issue 14, section 3) --------------------------------------
def _text_rollouts(*answers: str):
    """Rollouts of one prompt that make no tool call and differ only in their final answer."""
    return ([[{"role": "user", "content": "Book flight number 7"}]] * len(answers),
            [[{"role": "assistant", "content": a}] for a in answers])


async def test_rollouts_differing_only_in_their_answer_are_verified_apart():
    prompts, completions = _text_rollouts("It costs $5", "It costs $9", "I could not find it")
    rec = Recorder()
    out = await UVOutcomeReward(settings())(prompts, completions, log_extra=rec.log_extra)
    assert out == [1.0, 1.0, 1.0] and len(reward_fakes.KEYS) == 3 and len(set(reward_fakes.KEYS)) == 3
    assert rec.extra["uv_outcome/outcome_reasoning"] == [
        "answer='It costs $5'", "answer='It costs $9'", "answer='I could not find it'"]  # one verdict each


async def test_a_failed_rollout_is_not_asked_again_within_its_ttl():
    """A dead judge is asked once per rollout per TTL, not by every reward that comes along."""
    reward_fakes.FAIL_TASKS.add("task-0")
    f = UVOutcomeReward(settings(failure_ttl_s=60.0))
    prompts, completions, task_ids = batch(1, 1)
    assert await f(prompts, completions, task_id=task_ids) == [None]
    reward_fakes.FAIL_TASKS.clear()  # the judge is back, but the failure is still fresh
    assert await f(prompts, completions, task_id=task_ids) == [None]
    assert len(reward_fakes.CALLS) == 1


async def test_finished_results_are_an_lru_bounded_by_cache_size():
    f = UVOutcomeReward(settings(cache_size=2))
    prompts, completions = _text_rollouts("a", "b", "c", "d")

    async def score(*rows: int) -> None:
        await f([prompts[i] for i in rows], [completions[i] for i in rows])

    await score(0)
    await score(1)
    await score(0)  # a hit: "a" becomes the most recent
    assert len(reward_fakes.CALLS) == 2
    await score(2)  # evicts "b", the least recently used
    assert len(f.session._done) == 2
    await score(0)
    assert len(reward_fakes.CALLS) == 3  # "a" was kept
    await score(1)
    assert len(reward_fakes.CALLS) == 4 and len(f.session._done) == 2  # "b" was not
