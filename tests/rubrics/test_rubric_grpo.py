"""A GRPO run through the real TRL trainer with a `rubric` dataset column makes no rubric call
(issue 36 §6): every rollout is scored against the rubric its row carries."""
from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("trl")
pytest.importorskip("tokenizers")

pytestmark = pytest.mark.slow  # a real GRPO step on a tiny policy (tens of seconds)

from reward import RewardSettings, clear_sessions, make_uv_rewards
from reward.testing import run_grpo_smoke, tiny_cua_dataset
from verifier.config import VerifierConfig
from verifier.stages.rubric import write_line
from verifier.testing import ScriptedJudge
from verifier.trajectory import Task, Trajectory

JUDGE = ScriptedJudge()


def shared_judge() -> ScriptedJudge:
    return JUDGE


def test_grpo_with_a_rubric_column_makes_no_rubric_call(tmp_path):
    data = tiny_cua_dataset()
    lines = []
    for row in data:
        task = Task(id=row["task_id"], instruction=row["prompt"][-1]["content"])
        line = asyncio.run(write_line(Trajectory(task=task), VerifierConfig(), ScriptedJudge(model="writer")))
        lines.append(line.to_json_line())
    data = data.add_column("rubric", lines)
    clear_sessions()
    r = make_uv_rewards(RewardSettings(judge_factory=shared_judge, strict=True, rubrics_only=True))
    trainer = run_grpo_smoke([r.process, r.outcome], output_dir=tmp_path, dataset=data, max_steps=2,
                             reward_weights=[1.0, 1.0])
    logs = [h for h in trainer.state.log_history if "rewards/uv_outcome/mean" in h]
    assert len(logs) == 2 and all(h["uv_outcome/failure_rate"] == 0.0 for h in logs)
    assert JUDGE.requests_for("rubric") == [] and JUDGE.requests_for("outcome")
    # rubrics_only and no file: a row whose column were ignored would be refused (failure rate > 0)
