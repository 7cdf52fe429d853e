"""The recipe's CPU smoke config, for real: a GRPOTrainer step in which the tiny policy acts in
Chromium on the task sites, the verifier rewards score every episode over HTTP (echo judge), and
a checkpoint, the final model and its card are written."""
from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from reward import clear_sessions

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def test_smoke_config_runs_a_grpo_step_in_the_browser(browser_ok, tmp_path, capsys, monkeypatch):
    pytest.importorskip("trl")
    pd = pytest.importorskip("pandas")
    spec = importlib.util.spec_from_file_location("grpo_browser", REPO / "recipes" / "grpo_browser.py")
    recipe = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "grpo_browser", recipe)  # its dataclass resolves annotations there
    spec.loader.exec_module(recipe)
    clear_sessions()
    out = tmp_path / "run"
    summary = recipe.main(["--config", str(REPO / "recipes" / "configs" / "browser_smoke.yaml"),
                           "--output_dir", str(out)])
    clear_sessions()
    assert summary["rollouts"] == 2 and summary["rollouts_without_action"] == 0
    assert summary["episode_errors"] == 0
    assert all(n >= 3 for n in summary["screenshots_per_trajectory"])  # initial + before/after an action
    assert summary["tool_calls_per_rollout"] >= 1
    for name in ("uv_process", "uv_outcome"):
        assert summary[f"{name}_none_rate"] == 0.0 and math.isfinite(summary[f"{name}_mean"])
    assert summary["uv/judge_calls_per_rollout"] > 0  # the judge endpoint answered
    assert '"rollouts": 2' in capsys.readouterr().out
    assert (out / "checkpoint-1").is_dir() and (out / "model.safetensors").is_file()
    assert "universal-verifier" in (out / "README.md").read_text()
    table = pd.read_parquet(out / "completions" / "completions_00001.parquet")
    actions = [m for conv in table["completion"] for m in conv if m["role"] == "tool" and m["name"] != "answer"
               and "episode is over" not in str(m["content"])]
    assert actions and all(any(p["type"] == "image" for p in m["content"]) for m in actions)  # screenshots
