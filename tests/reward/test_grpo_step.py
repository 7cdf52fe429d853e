"""The verifier rewards inside a real TRL GRPOTrainer step on CPU (tiny random policy)."""
from __future__ import annotations

import pytest
import reward_fakes

pytest.importorskip("trl")
pytest.importorskip("tokenizers")

pytestmark = pytest.mark.slow  # real GRPO steps on a tiny policy (tens of seconds each)

from reward import RewardSettings, make_uv_rewards
from reward.testing import build_tiny_policy, run_grpo_smoke


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory):
    return build_tiny_policy(tmp_path_factory.mktemp("policy"))


def _settings():
    return RewardSettings(verify_fn=reward_fakes.fake_verify, judge_factory=reward_fakes.fake_judge,
                          cache_factory=None, strict=True)


def test_grpo_step_logs_both_rewards_and_verifies_each_rollout_once(tmp_path, tiny_policy):
    r = make_uv_rewards(_settings())
    trainer = run_grpo_smoke([r.process, r.outcome, reward_fakes.record_rollouts], output_dir=tmp_path,
                             model_dir=tiny_policy, reward_weights=[0.5, 1.0, 0.0], max_steps=2)
    logs = [h for h in trainer.state.log_history if "rewards/uv_process/mean" in h]
    assert len(logs) == 2
    # the tiny policy never calls a tool: 0 steps -> process 0.0; its text is an answer -> outcome 1.0
    assert logs[0]["rewards/uv_process/mean"] == 0.0 and logs[0]["rewards/uv_outcome/mean"] == 1.0
    assert logs[0]["reward"] == pytest.approx(1.0)  # 0.5 * 0 + 1.0 * 1
    assert logs[0]["uv/judge_calls_per_rollout"] == 4.0 and logs[0]["uv_outcome/failure_rate"] == 0.0
    # 2 steps x 4 rollouts, two rewards each: exactly one verification per distinct rollout (never
    # two for one rollout, never one for two rollouts that differ, e.g. only in their answer)
    assert len(reward_fakes.SEEN) == 8
    assert len(reward_fakes.KEYS) == len(set(reward_fakes.KEYS)) == len(set(reward_fakes.SEEN))


def test_grpo_step_judge_failure_is_nan_not_zero(tmp_path, tiny_policy):
    reward_fakes.FAIL_TASKS.update({"tiny-0", "tiny-1"})
    r = make_uv_rewards(_settings())
    trainer = run_grpo_smoke([r.process, r.outcome], output_dir=tmp_path, model_dir=tiny_policy,
                             multi_objective_aggregation="normalize_then_sum")
    (log,) = [h for h in trainer.state.log_history if "rewards/uv_outcome/mean" in h]
    assert log["uv_outcome/failure_rate"] == 1.0 and log["uv_process/failure_rate"] == 1.0
    # all-None rows are unscorable: TRL logs no mean at all (not 0) and trains them with advantage 0
    assert log["rewards/uv_outcome/mean"] is None and log["rewards/uv_process/mean"] is None


def test_grpo_steps_with_real_pipeline_one_rubric_per_group(tmp_path, tiny_policy):
    from verifier.testing import ScriptedJudge

    reward_fakes.SCRIPTED = judge = ScriptedJudge()
    try:
        r = make_uv_rewards(RewardSettings(judge_factory=reward_fakes.scripted_judge, strict=True))
        trainer = run_grpo_smoke([r.process, r.outcome, reward_fakes.record_rollouts], output_dir=tmp_path,
                                 model_dir=tiny_policy, max_steps=2, reward_weights=[1.0, 1.0, 0.0],
                                 multi_objective_aggregation="normalize_then_sum")
    finally:
        reward_fakes.SCRIPTED = None
    logs = [h for h in trainer.state.log_history if "rewards/uv_outcome/mean" in h]
    # scripted outcome: success for tiny-0 ("Find the cheapest flight ..."); tiny-1 asks to book a hotel
    # and a text completion takes no action, which code fails whatever the judge says (veto V5)
    assert [h["rewards/uv_outcome/mean"] for h in logs] == [1.0, 0.0]
    assert all(h["uv_outcome/failure_rate"] == 0.0 for h in logs)
    # 2 steps = 2 groups of 4 rollouts (tasks tiny-0, tiny-1): one rubric per group, one outcome per rollout
    assert len(judge.requests_for("rubric")) == 2
    assert len(reward_fakes.SEEN) == 8
    assert len(judge.requests_for("outcome")) == r.process.session.runs == len(set(reward_fakes.SEEN))


def test_vlm_policy_grpo_step_screenshot_reaches_the_judge(tmp_path):
    from verifier.testing import ScriptedJudge

    reward_fakes.SCRIPTED = judge = ScriptedJudge()
    try:
        r = make_uv_rewards(RewardSettings(judge_factory=reward_fakes.scripted_judge, strict=True))
        trainer = run_grpo_smoke([r.process, r.outcome], output_dir=tmp_path, vlm=True,
                                 reward_weights=[0.5, 1.0])
    finally:
        reward_fakes.SCRIPTED = None
    (log,) = [h for h in trainer.state.log_history if "rewards/uv_outcome/mean" in h]
    assert log["rewards/uv_outcome/mean"] == 1.0 and log["uv_process/failure_rate"] == 0.0
    assert len(judge.requests_for("rubric")) == 1  # one group, one rubric
    # the row's `image` (initial screenshot) became screenshot 1 and was shown to the judge
    rel = judge.requests_for("relevance")
    assert len(rel) == 1 and len(ScriptedJudge.images(rel[0])) == 1


class FakeBrowserEnv:
    """An environment_factory env: TRL calls reset(**row) per rollout; `click` becomes a tool."""

    def reset(self, **row):
        from verifier.trajectory import Step, Task

        self.task = Task(id=row["task_id"], instruction="env task: " + row["prompt"][-1]["content"])
        self.steps = [Step(index=1, action="open", arguments={"url": "https://shop.example"})]

    def click(self, x: int) -> str:
        """Click on the page.

        Args:
            x: horizontal pixel.
        """
        from verifier.trajectory import Step

        self.steps.append(Step(index=len(self.steps) + 1, action="click", arguments={"x": x}))
        return "clicked"

    @property
    def trajectory(self):
        from verifier.trajectory import Trajectory

        return Trajectory(task=self.task, steps=self.steps, final_answer="done")


def test_environment_factory_rollouts_reach_the_rewards(tmp_path, monkeypatch):
    from verifier.testing import ScriptedJudge

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    reward_fakes.SCRIPTED = judge = ScriptedJudge()
    try:
        r = make_uv_rewards(RewardSettings(judge_factory=reward_fakes.scripted_judge, strict=True))
        trainer = run_grpo_smoke([r.process, r.outcome], output_dir=tmp_path,
                                 environment_factory=FakeBrowserEnv)
    finally:
        reward_fakes.SCRIPTED = None
    (log,) = [h for h in trainer.state.log_history if "rewards/uv_outcome/mean" in h]
    assert log["uv_outcome/failure_rate"] == 0.0
    (rubric,) = judge.requests_for("rubric")
    assert "env task: " in ScriptedJudge.text(rubric)  # the task came from env.trajectory, not the prompt
    assert any("open" in ScriptedJudge.text(req) for req in judge.requests_for("action_scoring"))
