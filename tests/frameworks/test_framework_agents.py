"""Computer-use training on verl and OpenRLHF: a browser episode through each framework's own agent
classes, its screenshots reaching the verifier (the judge counts the images it receives).

Each framework runs in its own environment (tests/frameworks/setup_envs.sh, run by
tests/run_all.sh); the reward service and the counting judge run here. Without those
environments (or Chromium) the tests skip locally and fail under CI=true.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytestmark = [pytest.mark.slow, pytest.mark.browser]

from service_helpers import LoopbackJudge, Service
from suite_env import required_here

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent


class CountingJudge(LoopbackJudge):
    """The loopback judge, counting the image parts of the requests it answers."""

    images = 0

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        for msg in body.get("messages", []):
            content = msg.get("content")
            if isinstance(content, list):
                type(self).images += sum(isinstance(p, dict) and p.get("type") == "image_url" for p in content)
        return super().answer(path, body)


def _python(venv: str) -> Path:
    python = REPO / venv / "bin" / "python"
    if not python.exists():
        if required_here() or os.environ.get("CUA_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{venv} missing: run bash tests/frameworks/setup_envs.sh")
        pytest.skip(f"{venv} missing: run bash tests/frameworks/setup_envs.sh")
    return python


def _episode(venv: str, script: str, browser_ok: Any) -> tuple[dict[str, Any], int]:
    python = _python(venv)
    CountingJudge.images = 0
    with CountingJudge() as judge, Service(judge.url) as svc:
        # the framework env has the project installed into it: nothing is put on its path from here
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        run = subprocess.run([str(python), str(HERE / script), svc.url],
                             capture_output=True, text=True, timeout=600, cwd=REPO, env=env, check=False)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1]), CountingJudge.images


def test_verl_agent_loop_episode_reaches_the_verifier_with_its_screenshots(browser_ok):
    out, images = _episode(".venv-verl", "verl_episode.py", browser_ok)
    assert out["private_overrides"] == []  # verl's own loop runs the tools: no private method redefined
    assert out["actions"] == ["goto", "scroll", "answer"] and out["turns"] == 3
    assert out["final_answer"] == "The Riverside Branch opens at 10:00 on Saturdays."  # the reply without a tool call
    assert out["screenshots"] >= 4  # initial + before/after each action, full size for the judge
    assert out["tool_turn_in_prompt"] and out["response_mask_has_tool_tokens"]  # verl's multi-turn path
    assert out["truncated_tool_text"]  # verl's max_tool_response_length applies to the browser's page text
    assert out["policy_images"] == [[], [], []]  # a text policy: the screenshots go to the judge only
    for family, pads in (("vlm", [160, 320, 480]), ("llava", [5, 10, 15])):  # Qwen2-VL and LLaVA processors
        vlm = out[family]
        assert vlm["actions"] == out["actions"] and vlm["tool_turn_in_prompt"], family
        assert vlm["policy_images"] == [[[448, 280]] * k for k in (1, 2, 3)] and vlm["output_images"] == 3, family
        assert vlm["image_pads"] == pads, family  # verl's processor placed each one in the prompt
        assert vlm["recorded_sizes"] == [[960, 600]], family  # the judge's copy: full size
    for sample in (out, out["vlm"], out["llava"]):  # scored in the loop; the batch holds the scalars only
        extra = sample["extra"]
        assert extra["uv_unscored"] == 0.0 and extra["uv_grounded"] == 1.0
        assert sample["reward"] == extra["score"] and sample["rm_scores"]  # verl's reward worker is skipped
        assert not sample["batch_has_data_url"] and "trajectory" not in sample["batch_keys"]
        assert {"uv_outcome", "uv_process", "uv_unscored", "uv_grounded"} <= set(sample["batch_keys"])
    broken = out["broken"]  # an episode with nothing recorded is never scored as a zero
    assert broken["error"] == "TrajectoryError"
    assert broken["0.25"] == [0.25, {"score": 0.25, "uv_process": 0.25, "uv_outcome": 0.25, "uv_unscored": 1.0,
                                     "uv_grounded": 0.0}]
    assert out["non_tensor_bytes_per_sample"] < 8_000  # the recording was ~140 kB a sample here (docs/frameworks.md)
    assert images >= 1  # the judge saw the screenshots (a stage cache may answer later episodes)


def test_openrlhf_agent_episode_reaches_the_verifier_with_its_screenshots(browser_ok):
    out, images = _episode(".venv-openrlhf", "openrlhf_episode.py", browser_ok)
    for family in ("text", "qwen", "gemma"):
        run = out[family]
        assert run["turns"] == 3 and run["action_ranges"] == 3, family
        assert run["page_in_first_prompt"] and run["tools_in_first_prompt"] and run["tool_result_in_prompt"], family
        assert run["foreign_markup"] == [] and not run["doubled_end_of_turn"], family  # the policy's own turns only
        logs = run["extra_logs"]
        assert logs["uv_unscored"] == 0.0 and logs["uv_grounded"] == 1.0, family
        assert 0.0 <= float(run["reward"]) <= 1.0, family
    assert out["text"]["environment_images"] == [0, 0, 0]  # a text policy: the screenshots go to the judge only
    assert out["text"]["image_tokens_per_prompt"] == [0, 0, 0]  # and no image placeholder in its text
    assert out["qwen"]["first_prompt_head"].startswith("<|im_start|>system")
    assert out["gemma"]["first_prompt_head"].startswith("<bos><start_of_turn>user")
    for family, per_image in (("qwen", 160), ("gemma", 4)):  # goto and scroll each hand back their screenshot
        run = out[family]
        assert run["environment_images"] == [1, 1, 0] and run["image_sizes"] == [[448, 280]], family
        assert run["images_per_prompt"] == [0, 1, 2] and run["pixel_images"] == 2, family
        # the processor found one placeholder per screenshot and expanded it in the policy's own tokens
        assert run["image_tokens_per_prompt"] == [0, per_image, 2 * per_image], family
    assert images >= 1


def test_openrlhf_agent_in_ray_actors_without_the_drivers_environment(browser_ok, tmp_path):
    """OpenRLHF builds the agent inside its vLLM engine actors: the settings reach them through a
    configured agent file or Ray's runtime_env, never by inheritance from the driver's shell."""
    python = _python(".venv-openrlhf")
    with LoopbackJudge() as judge, Service(judge.url) as svc:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("CUA_")}
        run = subprocess.run([str(python), str(HERE / "openrlhf_ray.py"), svc.url, str(tmp_path)],
                             capture_output=True, text=True, timeout=600, cwd=REPO, env=env, check=False)
    assert run.returncode == 0, run.stderr[-4000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["configured"]["env"] == [] and out["bare"]["env"] == []  # nothing inherited
    assert out["runtime_env"]["env"] == ["CUA_REWARD_URL"]
    assert out["configured"]["reward_url"] == out["runtime_env"]["reward_url"] == svc.url
    assert out["bare"]["reward_url"] is None  # the control: without either, the actor has no URL of ours
    for name in ("configured", "runtime_env"):
        assert out[name]["extra_logs"]["uv_unscored"] == 0.0 and out[name]["extra_logs"]["uv_grounded"] == 1.0, name
