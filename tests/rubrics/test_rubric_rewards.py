"""The TRL rewards against a rubric file or a `rubric` column (issue 36 §3): stationary rewards.

The scripted judge writes a different rubric at every call (a judge at temperature > 0) and gives
every criterion 2 points, so the process reward depends on the rubric. Two separately constructed
sessions (two ranks, or a restart) then disagree on the same rollouts unless a rubric file or
column fixes the rubric.
"""
from __future__ import annotations

import json

import pytest
from PIL import Image
from rubric_helpers import counter_rubric, write_lines

from reward import RewardSettings, clear_sessions, make_uv_rewards
from verifier.config import VerifierConfig
from verifier.stages.rubric import write_line
from verifier.testing import ScriptedJudge
from verifier.trajectory import Task, Trajectory

TASK = "Find the cheapest flight to Lisbon"
CALLS: list[int] = []
JUDGES: list[ScriptedJudge] = []


def stochastic_judge() -> ScriptedJudge:
    """judge_factory: a fresh judge per session whose rubric changes with each call (shared counter)."""
    def rescore(_m, o):
        return {"items": [{"criterion_id": c, "evidence_tag": "consistent", "justification": "j",
                           "credit_basis": "evidence", "earned": 2} for c in o.expected_ids]}
    JUDGES.append(ScriptedJudge({"rubric": counter_rubric(CALLS), "rescoring": rescore}))
    return JUDGES[-1]


def rollouts(n: int = 3, task_id: str = "flight"):
    prompts, completions = [], []
    for j in range(n):
        prompts.append([{"role": "user", "content": [{"type": "image", "image": Image.new("RGB", (8, 8), "white")},
                                                     {"type": "text", "text": TASK}]}])
        completions.append([{"role": "assistant", "content": "s", "tool_calls": [
            {"type": "function", "function": {"name": "click", "arguments": {"x": j}}}]},
            {"role": "tool", "name": "click", "content": [{"type": "image", "image": Image.new("RGB", (8, 8), "red")}]},
            {"role": "assistant", "content": f"answer {j}"}])
    return prompts, completions, {"task_id": [task_id] * n}


async def _rubric_line(task_id: str = "flight") -> dict:
    CALLS.clear()
    line = await write_line(Trajectory(task=Task(id=task_id, instruction=TASK)), VerifierConfig(),
                            ScriptedJudge({"rubric": counter_rubric([0, 0, 0])}))  # the 4th writer's rubric
    return json.loads(line.to_json_line())


async def _fresh_process_rewards(**settings) -> tuple[list, ScriptedJudge]:
    """One "rank": a session built from scratch (nothing cached), scoring the same rollouts."""
    clear_sessions()
    r = make_uv_rewards(RewardSettings(judge_factory=stochastic_judge, strict=True, **settings))
    prompts, completions, cols = rollouts()
    got = await r.process(prompts, completions, **cols)
    return got, JUDGES[-1]


@pytest.fixture(autouse=True)
def _clean():
    CALLS.clear()
    JUDGES.clear()
    yield
    clear_sessions()


async def test_generated_rubrics_drift_across_sessions_and_a_file_removes_it(tmp_path):
    first, _ = await _fresh_process_rewards()
    second, _ = await _fresh_process_rewards()
    assert first != second  # the demonstration: a rubric per process is a different reward per process
    path = write_lines(tmp_path / "rubrics.jsonl", [await _rubric_line()])
    a, judge_a = await _fresh_process_rewards(rubrics=str(path), rubrics_only=True)
    b, judge_b = await _fresh_process_rewards(rubrics=str(path), rubrics_only=True)
    assert a == b and None not in a
    assert judge_a.requests_for("rubric") == [] == judge_b.requests_for("rubric")


async def test_a_rubric_column_scores_like_the_file(tmp_path):
    line = await _rubric_line()
    path = write_lines(tmp_path / "rubrics.jsonl", [line])
    from_file, _ = await _fresh_process_rewards(rubrics=str(path))
    clear_sessions()
    r = make_uv_rewards(RewardSettings(judge_factory=stochastic_judge, strict=True))
    prompts, completions, cols = rollouts()
    from_column = await r.process(prompts, completions, rubric=[json.dumps(line)] * 3, **cols)
    assert from_column == from_file and JUDGES[-1].requests_for("rubric") == []


async def test_rubrics_only_gives_none_for_an_uncovered_task_and_a_mismatch(tmp_path):
    line = await _rubric_line(task_id="other-task")
    path = write_lines(tmp_path / "rubrics.jsonl", [line])
    got, judge = await _fresh_process_rewards(rubrics=str(path), rubrics_only=True)
    assert got == [None, None, None] and judge.requests == []
    line["task_id"] = "flight"
    line["instruction"] = TASK + " tomorrow"
    from verifier.rubrics import instruction_sha256

    line["instruction_sha256"] = instruction_sha256(line["instruction"])
    clear_sessions()
    r = make_uv_rewards(RewardSettings(judge_factory=stochastic_judge, strict=True))
    prompts, completions, cols = rollouts()
    assert await r.process(prompts, completions, rubric=[json.dumps(line)] * 3, **cols) == [None] * 3
