"""One policy for results that fell back (issue 14, defect 8; fast, real pipeline, scripted judge).

When every rescoring run fails (the process score is the agent's own action-only claim) or the
side-effect check never ran, the TRL reward returns None. Offline scoring must agree: such a
rollout is `unscored` with the reason named, not averaged into the summary, and retried on a
rerun. `none_if_degraded` (one setting, same default) decides for both paths.
"""
from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest
from PIL import Image

from cua_verifier.cli import main, score_cmd, score_dataset_cmd
from cua_verifier.cli.inspect_cmd import to_native
from reward import RewardSettings, clear_sessions, make_uv_rewards
from verifier.errors import JudgeUnavailableError
from verifier.loaders.rollouts import build_trajectories
from verifier.testing import ScriptedJudge

JUDGE = ["--judge-url", "http://127.0.0.1:9/v1", "--model", "judge", "--no-progress"]
SCRIPT: dict = {}


def scripted_judge() -> ScriptedJudge:  # module level: RewardSettings.judge_factory
    return ScriptedJudge(dict(SCRIPT))


def _group(n: int = 2):
    prompts, completions = [], []
    for j in range(n):
        prompts.append([{"role": "user", "content": [{"type": "image", "image": Image.new("RGB", (8, 8), "white")},
                                                     {"type": "text", "text": "Find the cheapest flight"}]}])
        completions.append([
            {"role": "assistant", "content": "click", "tool_calls": [
                {"type": "function", "function": {"name": "click", "arguments": {"x": j}}}]},
            {"role": "tool", "name": "click", "content": [{"type": "image",
                                                           "image": Image.new("RGB", (8, 8), (j, 0, 0))}]},
            {"role": "assistant", "content": f"answer {j}"}])
    return prompts, completions


@pytest.fixture
def rollouts(tmp_path):
    prompts, completions = _group()
    trajs = build_trajectories(prompts, completions, {})
    path = tmp_path / "rollouts.jsonl"
    path.write_text("".join(to_native(t, embed=True) + "\n" for t in trajs))
    clear_sessions()
    yield prompts, completions, path
    clear_sessions()


def _records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _reward(prompts, completions, **kw):
    async def go():
        r = make_uv_rewards(RewardSettings(judge_factory=scripted_judge, strict=True, **kw))
        try:
            return await r.process(prompts, completions)
        finally:
            await r.process.session.aclose()
    return asyncio.run(go())


def _score_dataset(path: Path, out: Path, **kw) -> int:
    args = argparse.Namespace(source=str(path), out=str(out), split="train", name=None, streaming=False,
                              limit=None, id_column=None, concurrency=None, no_progress=True)
    settings = RewardSettings(judge_factory=scripted_judge, max_concurrency=2, **kw)
    return score_dataset_cmd.run(args, settings)


@pytest.mark.parametrize("stage", ["rescoring", "side_effects"])
def test_reward_and_both_offline_commands_agree(stage, rollouts, tmp_path, monkeypatch, capsys):
    prompts, completions, path = rollouts
    SCRIPT.clear()
    SCRIPT[stage] = JudgeUnavailableError("down", stage=stage)
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: scripted_judge())

    assert _reward(prompts, completions) == [None, None]

    out = tmp_path / "score.jsonl"
    assert main(["score", str(path), "--out", str(out), *JUDGE]) == 3
    recs = _records(out)
    assert [r["status"] for r in recs] == ["unscored", "unscored"]
    assert all(r["reason"].startswith(f"DegradedResult: {stage} fell back") for r in recs)
    assert all(r["result"]["degraded"] for r in recs)  # the weak result is kept for inspection
    assert "scored: 0  unscored: 2" in capsys.readouterr().out  # never in the means

    ds_out = tmp_path / "dataset.jsonl"
    assert _score_dataset(path, ds_out) == 3
    assert [r["status"] for r in _records(ds_out)] == ["unscored", "unscored"]

    SCRIPT.clear()  # the judge is healthy again: the rerun retries exactly those
    assert main(["score", str(path), "--out", str(out), *JUDGE]) == 0
    assert [r["status"] for r in _records(out)][-2:] == ["scored", "scored"] and len(_records(out)) == 4


def test_the_same_setting_relaxes_both_paths(rollouts, tmp_path, monkeypatch):
    prompts, completions, path = rollouts
    SCRIPT.clear()
    SCRIPT["rescoring"] = JudgeUnavailableError("down", stage="rescoring")
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: scripted_judge())
    rewards = _reward(prompts, completions, none_if_degraded=["side_effects"])
    assert all(isinstance(v, float) for v in rewards)
    cfg = tmp_path / "lenient.json"
    cfg.write_text(json.dumps({"none_if_degraded": ["side_effects"]}))
    out = tmp_path / "score.jsonl"
    assert main(["score", str(path), "--out", str(out), "--config", str(cfg), *JUDGE]) == 0
    assert [r["status"] for r in _records(out)] == ["scored", "scored"]
    ds_out = tmp_path / "dataset.jsonl"
    assert _score_dataset(path, ds_out, none_if_degraded=["side_effects"]) == 0
    assert [r["status"] for r in _records(ds_out)] == ["scored", "scored"]
