"""`cua-verifier check-judge` against real vLLM servers on CPU (engine tier, issue 19 §2).

The session's demo judge passes; the same server asked for a model it does not serve fails on the
model line with the served name as the fix. One misconfigured server (started once, for both) has
a 1-image limit and a context too short for the largest call: the image line must name
`--limit-mm-per-prompt`, the context line `--max-model-len`.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from serving.command import ServeConfig, build_command
from serving.launcher import start_server, stop_server, wait_for_health
from serving.presets import get_preset

pytestmark = pytest.mark.engine
CLI = Path(sys.executable).with_name("cua-verifier")
API_KEY_ENV = "CUA_E2E_CRAMPED_KEY"
HEALTH_TIMEOUT_S = float(os.environ.get("CUA_ENGINE_HEALTH_TIMEOUT", "420"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _check(url: str, model: str, key: str, *extra: str) -> tuple[int, dict[str, str], str]:
    env = {**os.environ, "CUA_JUDGE_API_KEY": key}
    proc = subprocess.run([str(CLI), "check-judge", "--judge-url", url, "--model", model, *extra],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    lines = {}
    for line in proc.stdout.splitlines():
        status, _, rest = line.partition(" ")
        name = rest.strip().split(":", 1)[0]
        if status in ("PASS", "FAIL", "WARN", "UNKNOWN"):
            lines[name] = line
    return proc.returncode, lines, proc.stdout + proc.stderr


def test_check_judge_passes_on_the_demo_judge_and_names_the_served_model(engine) -> None:
    t0 = time.monotonic()
    rc, lines, out = _check(engine.base_url, engine.model, engine.api_key)
    print(f"\n[check-judge] demo judge checked in {time.monotonic() - t0:.1f}s\n{out}")
    assert rc == 0, out
    for name in ("model listed", "largest prompt fits the context", "image part accepted",
                 "2 image(s) in one call", "schema rubric", "schema rescoring", "schema outcome",
                 "latency of one call", "prefix caching"):
        assert name in lines and not lines[name].startswith("FAIL"), (name, out)
    assert lines["prefix caching"].startswith("PASS"), out  # serve-judge enables it; vLLM reports it
    assert "server tokenizer" in lines["largest prompt fits the context"], out

    rc, lines, out = _check(engine.base_url, "no-such-judge", engine.api_key)
    assert rc == 1, out
    assert lines["model listed"].startswith("FAIL") and f"--model {engine.model}" in lines["model listed"], out


@pytest.fixture(scope="module")
def cramped(judge_venv: Path, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """The demo judge misconfigured twice over: one image per prompt, a 4k context."""
    cfg = ServeConfig(preset=get_preset("cpu-tiny"), model=str(tiny_model), venv=str(judge_venv),
                      port=_free_port(), api_key_env=API_KEY_ENV, max_images=1, max_model_len=4096)
    key = "cramped-key"
    log = tmp_path_factory.mktemp("cramped") / "vllm.log"
    proc = start_server(build_command(cfg), environ={**os.environ, API_KEY_ENV: key}, log=log)
    try:
        wait_for_health(cfg.health_url, timeout_s=HEALTH_TIMEOUT_S, proc=proc, log_path=log)
        yield cfg, key
    finally:
        stop_server(proc, grace_s=5)


def test_check_judge_fails_a_misconfigured_judge_with_each_remedy(cramped) -> None:
    cfg, key = cramped
    t0 = time.monotonic()
    rc, lines, out = _check(cfg.base_url, cfg.served_model_name, key)
    print(f"\n[check-judge] misconfigured judge checked in {time.monotonic() - t0:.1f}s\n{out}")
    assert rc == 1, out
    assert lines["model listed"].startswith("PASS"), out
    assert lines["image part accepted"].startswith("PASS"), out
    images = lines["2 image(s) in one call"]
    assert images.startswith("FAIL") and "allows 1 image" in images and "--limit-mm-per-prompt" in images, out
    context = lines["largest prompt fits the context"]
    assert context.startswith("FAIL") and "4096" in context and "--max-model-len" in context, out
