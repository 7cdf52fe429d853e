"""`serve-judge --dry-run` prints the exact vLLM command for every preset (fast; no engine needed).

The dry-run goes through the same `build_command` the real launch and the engine tier use, so
these checks pin what a user would actually start on a GPU node.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from cua_verifier.cli import main
from serving.command import ServeConfig, build_command
from serving.presets import PRESETS, get_preset
from verifier.errors import ConfigError

SECRET = "s3cr3t-value-that-must-not-print"


def _dry_run(capsys, monkeypatch, *args: str) -> list[str]:
    monkeypatch.setenv("CUA_JUDGE_API_KEY", SECRET)
    rc = main(["serve-judge", "--dry-run", "--venv", "/opt/judge", *args])
    out = capsys.readouterr().out
    assert rc == 0
    assert SECRET not in out
    return shlex.split(out.strip(), posix=True)


def _flag(words: list[str], name: str) -> str:
    assert words.count(name) == 1, f"{name} appears {words.count(name)} times"
    return words[words.index(name) + 1]


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_dry_run_prints_the_presets_command(name, capsys, monkeypatch):
    preset = PRESETS[name]
    extra = ["--model", "/models/tiny"] if preset.model is None else []
    words = _dry_run(capsys, monkeypatch, "--preset", name, *extra)
    n_env = next(i for i, w in enumerate(words) if not re.match(r"^[A-Z_]+=", w))
    env = dict(w.split("=", 1) for w in words[:n_env])
    argv = words[n_env:]
    model = preset.model or "/models/tiny"
    if preset.device == "cpu":
        assert argv[:5] == ["/opt/judge/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", model]
        assert env["VLLM_CPU_KVCACHE_SPACE"] == "1"
        assert "--gpu-memory-utilization" not in argv
    else:
        assert argv[:3] == ["/opt/judge/bin/vllm", "serve", model]
        assert float(_flag(argv, "--gpu-memory-utilization")) == preset.gpu_memory_utilization
    assert env["VLLM_NO_USAGE_STATS"] == "1"
    assert _flag(argv, "--host") == "127.0.0.1"
    assert _flag(argv, "--port") == "8010"  # not 8000: trl vllm-serve's port
    assert _flag(argv, "--served-model-name") == "judge"
    assert int(_flag(argv, "--max-model-len")) == preset.max_model_len
    assert json.loads(_flag(argv, "--limit-mm-per-prompt")) == {"image": preset.max_images, "video": 0}
    pixels = json.loads(_flag(argv, "--mm-processor-kwargs"))
    assert pixels == preset.mm_processor_kwargs
    assert preset.max_pixels in (pixels.get("max_pixels"), pixels.get("size", {}).get("longest_edge"))
    assert json.loads(_flag(argv, "--structured-outputs-config")) == {
        "backend": "guidance", "disable_any_whitespace": True}
    assert "--enable-prefix-caching" in argv
    assert int(_flag(argv, "--tensor-parallel-size")) == preset.tensor_parallel_size
    assert int(_flag(argv, "--data-parallel-size")) == preset.data_parallel_size
    assert ("--mm-encoder-tp-mode" in argv) == (preset.tensor_parallel_size > 1 and bool(preset.mm_encoder_tp_mode))
    assert ("--enforce-eager" in argv) == preset.enforce_eager
    # The key travels in vLLM's environment, referenced and never printed; never on the command line
    # (argv is world-readable through ps and /proc).
    assert env["VLLM_API_KEY"] == "$CUA_JUDGE_API_KEY"
    assert "--api-key" not in argv


def test_overrides_reach_the_command(capsys, monkeypatch):
    words = _dry_run(capsys, monkeypatch, "--preset", "qwen2.5-vl-7b", "--tp", "2", "--dp", "4", "--port", "9001",
                     "--max-model-len", "8192", "--max-images", "3", "--max-pixels", "100000",
                     "--gpu-memory-utilization", "0.5", "--served-model-name", "uv-judge", "--", "--seed", "7")
    assert _flag(words, "--tensor-parallel-size") == "2"
    assert _flag(words, "--data-parallel-size") == "4"
    assert _flag(words, "--port") == "9001"
    assert _flag(words, "--max-model-len") == "8192"
    assert json.loads(_flag(words, "--limit-mm-per-prompt")) == {"image": 3, "video": 0}
    assert json.loads(_flag(words, "--mm-processor-kwargs"))["max_pixels"] == 100000
    assert _flag(words, "--gpu-memory-utilization") == "0.5"
    assert _flag(words, "--served-model-name") == "uv-judge"
    assert words[-2:] == ["--seed", "7"]
    assert _flag(words, "--mm-encoder-tp-mode") == "data"  # vision encoder data-parallel under TP


def test_literal_dry_run_line_keeps_the_variable_unexpanded(capsys, monkeypatch):
    monkeypatch.setenv("CUA_JUDGE_API_KEY", SECRET)
    assert main(["serve-judge", "--dry-run", "--preset", "qwen3-vl-8b"]) == 0
    out = capsys.readouterr().out
    assert out.startswith('VLLM_API_KEY="$CUA_JUDGE_API_KEY" ') or ' VLLM_API_KEY="$CUA_JUDGE_API_KEY" ' in out
    assert SECRET not in out and "--api-key" not in out


def test_secret_reaches_the_child_environment_only_at_launch():
    cmd = build_command(ServeConfig(preset=get_preset("qwen2.5-vl-3b"), api_key_env="MY_KEY"))
    assert SECRET not in cmd.shell() and 'VLLM_API_KEY="$MY_KEY"' in cmd.shell()
    env = cmd.launch_env({"MY_KEY": SECRET, "PATH": "/bin"})
    assert env["VLLM_API_KEY"] == SECRET and env["PATH"] == "/bin" and env["VLLM_NO_USAGE_STATS"] == "1"
    assert not any(SECRET in a for a in cmd.argv)
    with pytest.raises(ConfigError, match="MY_KEY"):
        cmd.launch_env({})


def test_launched_process_has_the_key_in_its_environment_not_its_argv(tmp_path):
    """What `ps` shows (argv) must not hold the key; the child's own environment must."""
    from serving.launcher import start_server

    cmd = build_command(ServeConfig(preset=get_preset("qwen2.5-vl-3b"), api_key_env="MY_KEY"))
    probe = ("import json, os, sys; print(json.dumps({'argv': sys.argv, "
             "'key': os.environ.get('VLLM_API_KEY')}))")
    cmd = cmd.model_copy(update={"argv": [sys.executable, "-c", probe, *cmd.argv[1:]]})
    log = tmp_path / "child.log"
    proc = start_server(cmd, environ={**os.environ, "MY_KEY": SECRET}, log=log)
    assert proc.wait(timeout=30) == 0
    seen = json.loads(log.read_text().strip().splitlines()[-1])
    assert seen["key"] == SECRET
    assert not any(SECRET in a for a in seen["argv"]) and not any(SECRET in a for a in proc.args)


def test_no_key_configured_clears_a_stray_server_key():
    cmd = build_command(ServeConfig(preset=get_preset("qwen2.5-vl-7b"), api_key_env=None))
    assert "VLLM_API_KEY" not in cmd.launch_env({"VLLM_API_KEY": "stray"})
    assert cmd.shell().startswith("env -u VLLM_API_KEY ")


def test_no_key_is_refused_off_loopback_and_allowed_on_it():
    with pytest.raises(ConfigError, match="without an API key"):
        build_command(ServeConfig(preset=get_preset("qwen2.5-vl-7b"), host="0.0.0.0", api_key_env=None))
    cmd = build_command(ServeConfig(preset=get_preset("qwen2.5-vl-7b"), api_key_env=None))
    assert "--api-key" not in cmd.argv


def test_cpu_tiny_needs_a_model(capsys):
    assert main(["serve-judge", "--dry-run", "--preset", "cpu-tiny"]) == 2
    assert "--model" in capsys.readouterr().err


def test_unknown_preset_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown preset"):
        get_preset("gpt-judge-9000")


def test_base_and_health_urls_for_wildcard_bind():
    cfg = ServeConfig(preset=get_preset("qwen2.5-vl-7b"), host="0.0.0.0", port=8123)
    assert cfg.base_url == "http://127.0.0.1:8123/v1"
    assert cfg.health_url == "http://127.0.0.1:8123/health"


def test_ready_text_points_clients_at_the_server_and_flags_the_demo():
    from serving.cli import ready_text
    from serving.demo import DEMO_WARNING

    cfg = ServeConfig(preset=get_preset("qwen2.5-vl-7b"), port=8123, served_model_name="uv")
    text = ready_text(cfg)
    assert "export CUA_JUDGE_URL=http://127.0.0.1:8123/v1" in text and "export CUA_JUDGE_MODEL=uv" in text
    assert "CUA_JUDGE_API_KEY is already set" in text and DEMO_WARNING not in text
    sourced = ready_text(cfg, env_file=Path("/home/u/.cache/cua-verifier/judge-8123.env"))
    assert "source /home/u/.cache/cua-verifier/judge-8123.env" in sourced and "export" not in sourced
    demo = ready_text(ServeConfig(preset=get_preset("cpu-tiny"), model="/m"))
    assert DEMO_WARNING in demo and "random-weight" in demo
