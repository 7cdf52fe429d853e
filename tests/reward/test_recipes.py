"""The recipes run as documented: GRPO on CPU with a tiny VLM, offline scoring through the shell recipe."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from suite_env import load_recipe

from reward import clear_sessions
from verifier.records import ResultWriter
from verifier.trajectory import Task, Trajectory

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def _grpo_train():
    return load_recipe("grpo_train.py", "grpo_train")


@pytest.mark.slow
def test_grpo_recipe_tiny_vlm_scripted_judge(tmp_path, capsys):
    pytest.importorskip("trl")
    recipe = _grpo_train()
    clear_sessions()
    rc = recipe.main(["--config", str(REPO / "recipes" / "configs" / "train_smoke.yaml"), "--scripted_judge",
                      "--max_completion_length", "8", "--no_save", "--output_dir", str(tmp_path),
                      "--multi_objective_aggregation", "normalize_then_sum"])
    clear_sessions()
    assert rc == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["rewards/uv_outcome/mean"] == 1.0 and last["uv_outcome/failure_rate"] == 0.0
    assert not (tmp_path / "model.safetensors").exists()  # --no_save: no final model either


def test_grpo_recipe_needs_a_model():
    pytest.importorskip("trl")
    with pytest.raises(SystemExit) as exc:
        _grpo_train().parse(["--bf16", "false"])
    assert exc.value.code == 2


def test_offline_score_shell_recipe(tmp_path):
    src = tmp_path / "rollouts.jsonl"
    src.write_text("".join(Trajectory(task=Task(id=f"t{k}", instruction="x"), final_answer="a").to_json()
                           + "\n" for k in range(3)))
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"verify_fn": "reward_fakes.fake_verify",
                               "judge_factory": "reward_fakes.fake_judge",
                               "cache_factory": None}))
    env = {**os.environ, "CUA_JUDGE_URL": "http://127.0.0.1:9/v1", "CUA_JUDGE_MODEL": "judge",
           "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO)]),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    out = tmp_path / "res" / "scores.parquet"
    proc = subprocess.run(["bash", str(REPO / "recipes" / "offline_score.sh"), str(src), str(out),
                           "--config", str(cfg), "--no-progress"], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "scored: 3  unscored: 0" in proc.stdout
    assert out.exists()
    assert ResultWriter(Path(str(out) + ".records.jsonl")).done_ids() == {f"rollouts.jsonl#{k}" for k in range(3)}
