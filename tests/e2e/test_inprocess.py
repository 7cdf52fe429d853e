"""The in-process backend (vLLM's `AsyncLLM`): its engine arguments (fast) and a real run (engine tier).

The real run happens in the judge venv (the project venv has no vLLM), through
`inprocess_smoke.py`: three concurrent calls, with 0, 1 and 3 screenshots, on the tiny model.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from serving.inprocess import InProcessConfig, llm_kwargs
from serving.presets import get_preset

SMOKE = Path(__file__).with_name("inprocess_smoke.py")


def test_llm_kwargs_mirror_the_server_flags():
    kw = llm_kwargs(InProcessConfig(preset="qwen2.5-vl-72b", max_model_len=8192, llm_kwargs={"seed": 3}))
    p = get_preset("qwen2.5-vl-72b")
    assert kw["model"] == p.model and kw["tensor_parallel_size"] == 4 and kw["max_model_len"] == 8192
    assert kw["limit_mm_per_prompt"] == {"image": p.max_images, "video": 0}
    assert kw["mm_processor_kwargs"] == p.mm_processor_kwargs
    assert kw["structured_outputs_config"] == {"backend": "guidance", "disable_any_whitespace": True}
    assert kw["enable_prefix_caching"] is True and kw["gpu_memory_utilization"] == p.gpu_memory_utilization
    assert kw["seed"] == 3


def test_core_does_not_import_vllm():
    # The in-process backend is optional: importing the package and its serving CLI must not need vLLM.
    code = ("import sys, verifier, verifier.judge, serving.cli, serving.inprocess; "
            "assert 'vllm' not in sys.modules, 'vllm imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])


@pytest.mark.engine
def test_inprocess_judge_on_the_tiny_model(judge_venv, tiny_model):
    proc = subprocess.run([str(judge_venv / "bin" / "python"), str(SMOKE), str(tiny_model)],
                          capture_output=True, text=True, timeout=420, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(lines[-1].removeprefix("RESULT "))
    assert len(result["parsed"]) == 3
    assert all(p["category"] in {"navigation", "input", "other"} for p in result["parsed"])
    assert result["models"] == ["judge"] * 3
    no_image, one, three = result["prompt_tokens"]
    assert no_image < one < three  # the screenshots reached the engine
    assert all(c > 0 for c in result["completion_tokens"])
    assert result["generations"] == 3  # one engine request per call: no re-asks were needed
    assert result["decodes"] == 3  # the screenshot shown twice was decoded once
    assert result["prepared"] == result["decoded_ahead"] == 3  # ahead of the calls, which then hit the cache
