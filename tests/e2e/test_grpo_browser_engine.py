"""The browser smoke step against the real CPU vLLM judge (this tier's session server): the tiny
policy acts in Chromium, every episode is verified over HTTP by the tiny Qwen2-VL judge served by
the project's own launcher, with its API key. Verdicts are random; asserted: the judge answered
(200s in its access log, no 401), every rollout acted, rewards are floats or None with a logged
rate. (The browser tier itself is tests/env.)"""
from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

from reward import clear_sessions

pytestmark = [pytest.mark.engine, pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CHAT = '"POST /v1/chat/completions HTTP/1.1" '


def _load(name: str, path: Path, monkeypatch):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module



def test_browser_grpo_step_with_the_real_cpu_judge(browser_ok, engine, tmp_path, monkeypatch):
    pytest.importorskip("trl")
    config = tmp_path / "uv.json"
    config.write_text(json.dumps({"judge": engine.judge_config().model_dump(mode="json")}))
    recipe = _load("grpo_browser_engine", REPO / "recipes" / "grpo_browser.py", monkeypatch)
    log = engine.log_path.read_text(errors="replace") if engine.log_path.is_file() else ""
    ok_before = log.count(CHAT + "200")
    clear_sessions()
    try:
        summary = recipe.main(["--config", str(REPO / "recipes" / "configs" / "browser_smoke.yaml"),
                               "--output_dir", str(tmp_path / "run"), "--judge", "url",
                               "--verifier_config", str(config)])
    finally:
        clear_sessions()
    log = engine.log_path.read_text(errors="replace")
    assert log.count(CHAT + "200") > ok_before, "the judge never answered"
    assert CHAT + "401" not in log
    assert summary["rollouts"] == 2 and summary["rollouts_without_action"] == 0
    for name in ("uv_process", "uv_outcome"):
        assert 0.0 <= summary[f"{name}_none_rate"] <= 1.0
        mean = summary[f"{name}_mean"]
        assert mean is None or isinstance(mean, float) and (math.isnan(mean) or 0.0 <= mean <= 1.0)
