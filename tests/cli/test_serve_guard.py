"""`serve-judge` key guard and launch errors (issue 14, defect 6 and first-hour items; fast, no engine).

A public bind without a key, a second --host/--port/--api-key smuggled after `--` (vLLM honours
the last one), and a missing vLLM must each end in one clear line and a non-zero exit.
"""
from __future__ import annotations

import shlex

import pytest

from cua_verifier.cli import main
from serving import cli as serve_cli
from serving.command import ServeConfig, build_command, reserved_flag
from serving.presets import get_preset
from verifier.errors import ConfigError


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["serve-judge", *argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.parametrize("argv", [
    ["--host", "0.0.0.0", "--api-key-env="],
    ["--host", "0.0.0.0", "--api-key-env", "  "],
    ["--host", "0.0.0.0", "--no-api-key"],
])
def test_public_bind_without_a_key_is_refused(capsys, argv):
    rc, out, err = _run(capsys, "--dry-run", "--venv", "/opt/j", *argv)
    assert rc == 2 and out == ""
    assert "refusing to serve on 0.0.0.0 without an API key" in err


def test_empty_key_env_on_loopback_means_no_key():
    cmd = build_command(ServeConfig(preset=get_preset("qwen2.5-vl-7b"), api_key_env=""))
    assert "VLLM_API_KEY" in cmd.unset_env and not cmd.secret_env


@pytest.mark.parametrize("extra", [
    ["--host", "0.0.0.0"], ["--host=0.0.0.0"], ["--port", "80"], ["--port=80"], ["--api-key", "k"],
    ["--api-key=k"], ["--api_key=k"], ["--hos", "0.0.0.0"], ["--seed", "1", "--host", "::"],
])
def test_passthrough_cannot_override_host_port_or_key(capsys, extra):
    rc, out, err = _run(capsys, "--dry-run", "--venv", "/opt/j", "--", *extra)
    assert rc == 2 and out == ""
    assert "would override serve-judge's own" in err and "Traceback" not in err


def test_harmless_passthrough_still_reaches_vllm(capsys):
    rc, out, _ = _run(capsys, "--dry-run", "--venv", "/opt/j", "--", "--seed", "7", "--hf-overrides={}")
    assert rc == 0 and shlex.split(out)[-3:] == ["--seed", "7", "--hf-overrides={}"]
    assert shlex.split(out).count("--host") == 1


def test_reserved_flag_matching():
    assert reserved_flag("--host=1.2.3.4") == "--host"
    assert reserved_flag("--api_key") == "--api-key"
    assert reserved_flag("--port") == "--port"
    assert reserved_flag("--portal") is None and reserved_flag("--seed") is None
    assert reserved_flag("0.0.0.0") is None and reserved_flag("--") is None


def test_missing_vllm_is_one_line_not_a_traceback(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("CUA_JUDGE_API_KEY", "k")
    rc, _, err = _run(capsys, "--venv", str(tmp_path / "no-such-venv"), "--health-timeout", "1")
    assert rc == 2
    assert "no-such-venv/bin/vllm not found" in err and "setup-judge-env" in err
    assert "Traceback" not in err


def test_missing_vllm_on_path(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUA_JUDGE_VENV", str(tmp_path / "absent"))
    monkeypatch.setenv("CUA_JUDGE_API_KEY", "k")
    rc, _, err = _run(capsys, "--health-timeout", "1")
    assert rc == 2 and "vllm not found" in err


def test_demo_dry_run_prints_the_demo_command(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("CUA_CACHE_DIR", str(tmp_path))
    rc, out, err = _run(capsys, "--demo", "--dry-run", "--venv", "/opt/cpu")
    words = shlex.split(out)
    assert rc == 0
    assert "/opt/cpu/bin/python" in words and "vllm.entrypoints.openai.api_server" in words
    assert words[words.index("--model") + 1] == str(tmp_path / "tiny-qwen2vl")
    assert 'VLLM_API_KEY="$CUA_DEMO_JUDGE_API_KEY"' in out and "--demo first creates" in err


def test_gpu_dry_run_on_a_cpu_machine_warns(capsys, monkeypatch):
    monkeypatch.setattr(serve_cli.shutil, "which", lambda name: None)
    rc, out, err = _run(capsys, "--dry-run", "--venv", "/opt/j", "--preset", "qwen2.5-vl-7b")
    assert rc == 0 and "/opt/j/bin/vllm" in out
    assert "no NVIDIA GPU" in err and "--demo" in err
    monkeypatch.setattr(serve_cli.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    rc, _, err = _run(capsys, "--dry-run", "--venv", "/opt/j", "--preset", "qwen2.5-vl-7b")
    assert rc == 0 and "no NVIDIA GPU" not in err


def test_config_error_from_build_command():
    with pytest.raises(ConfigError, match="--port"):
        build_command(ServeConfig(preset=get_preset("qwen2.5-vl-7b"), extra_args=["--port=1"]))


def test_setup_judge_env_help_has_a_description(capsys):
    with pytest.raises(SystemExit):
        main(["setup-judge-env", "--help"])
    assert "separate from the training environment" in " ".join(capsys.readouterr().out.split())
