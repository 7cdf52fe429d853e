"""The GRPO recipe and both reward functions against the real tiny vLLM judge (CPU).

`recipes/grpo_train.py --tiny` trains one step of a tiny random VLM policy; TRL calls the two
verifier rewards, which verify every rollout over HTTP against the engine-tier server with its API
key. Verdicts are random; what is asserted is that the rewards and their metrics reach TRL's log
and that the judge really answered (its access log shows 200s, no 401s).
"""
from __future__ import annotations

import importlib.util
import json
import math
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine

REPO = Path(__file__).resolve().parents[2]
CHAT = '"POST /v1/chat/completions HTTP/1.1" '


def _access(engine) -> tuple[int, int]:
    text = engine.log_path.read_text(errors="replace") if engine.log_path.is_file() else ""
    return text.count(CHAT + "200"), text.count(CHAT + "401")


def test_grpo_recipe_one_step_with_the_real_judge(engine, tmp_path, capsys):
    pytest.importorskip("trl")
    config = tmp_path / "uv.json"  # the recipe's --verifier-config: the engine's judge, key env included
    config.write_text(json.dumps({"judge": engine.judge_config().model_dump(mode="json")}))
    spec = importlib.util.spec_from_file_location("grpo_train_engine", REPO / "recipes" / "grpo_train.py")
    recipe = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = recipe  # its dataclass resolves annotations there
    spec.loader.exec_module(recipe)
    ok_before, denied_before = _access(engine)
    t0 = time.monotonic()
    rc = recipe.main(["--config", str(REPO / "recipes" / "configs" / "train_smoke.yaml"), "--num_generations", "2",
                      "--per_device_train_batch_size", "2", "--max_completion_length", "8", "--no_save",
                      "--verifier_config", str(config), "--output_dir", str(tmp_path / "run")])
    elapsed = time.monotonic() - t0
    assert rc == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    print(f"[engine] GRPO recipe step with the real judge: {elapsed:.0f}s; {last}")
    for name in ("uv_process", "uv_outcome"):
        mean = last[f"rewards/{name}/mean"]
        assert mean is None or isinstance(mean, float), (name, mean)  # NaN when every rollout failed
        assert 0.0 <= last[f"{name}/failure_rate"] <= 1.0
    if min(last["uv_process/failure_rate"], last["uv_outcome/failure_rate"]) < 1.0:
        assert last["uv/judge_calls_per_rollout"] > 0 and last["uv/tokens_per_rollout"] > 0
        assert math.isfinite(last["rewards/uv_process/mean"]) or math.isfinite(last["rewards/uv_outcome/mean"])
    ok_after, denied_after = _access(engine)
    assert ok_after > ok_before, "the judge never answered a verification request"
    assert denied_after == denied_before, "the rewards' requests were refused (API key not passed?)"
