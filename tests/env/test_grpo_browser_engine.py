"""The browser smoke step against the real CPU vLLM judge (engine tier): the tiny policy acts in
Chromium, every episode is verified over HTTP by the tiny Qwen2-VL judge served by the project's
own launcher (`serving`, preset cpu-tiny), with its API key. Verdicts are random; asserted: the
judge answered (200s in its access log, no 401), every rollout acted, rewards are floats or None
with a logged rate."""
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


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    e2e = _load_module_once()
    venv = e2e._judge_venv()
    if venv is None:
        pytest.skip("judge venv missing: run `bash serving/setup_judge_env.sh --cpu` (or set CUA_JUDGE_VENV)")
    model = e2e.build_tiny_qwen2vl(REPO / ".cache" / "tiny-qwen2vl")
    eng = e2e.Engine(venv=venv, model_dir=model, log_path=tmp_path_factory.mktemp("engine") / "vllm.log")
    eng.ensure_running()
    yield eng
    e2e.stop_server(eng.proc, grace_s=5)


def _load_module_once():
    name = "e2e_engine_support"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "tests" / "e2e" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
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
    summary = recipe.main(["--config", str(REPO / "recipes" / "configs" / "browser_smoke.yaml"),
                           "--output_dir", str(tmp_path / "run"), "--judge", "url",
                           "--verifier_config", str(config)])
    clear_sessions()
    log = engine.log_path.read_text(errors="replace")
    assert log.count(CHAT + "200") > ok_before, "the judge never answered"
    assert CHAT + "401" not in log
    assert summary["rollouts"] == 2 and summary["rollouts_without_action"] == 0
    for name in ("uv_process", "uv_outcome"):
        assert 0.0 <= summary[f"{name}_none_rate"] <= 1.0
        mean = summary[f"{name}_mean"]
        assert mean is None or isinstance(mean, float) and (math.isnan(mean) or 0.0 <= mean <= 1.0)
