"""Where the demo judge's key and environment come from, and where a generated key goes (fast, no engine).

The launcher is replaced by a recorder, so these check exactly what a real launch would hand the
server (its environment) and print to the terminal, without starting vLLM.
"""
from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

import pytest

from cua_verifier.cli import main
from serving import cli, demo

REPO = Path(__file__).resolve().parents[2]
USER_KEY = "sk-real-provider-key-must-not-leak"


class FakeProc:
    pid = 424242
    returncode = None

    def poll(self):
        return None


@pytest.fixture
def launches(monkeypatch, tmp_path):
    """Record every launch (command + the child's full environment) instead of starting a server."""
    seen: list[dict] = []

    def fake_start(cmd, *, environ=None, log=None):
        seen.append({"cmd": cmd, "env": cmd.launch_env(os.environ if environ is None else environ)})
        return FakeProc()

    for mod in (demo, cli):
        monkeypatch.setattr(mod, "start_server", fake_start)
        monkeypatch.setattr(mod, "wait_for_health", lambda *a, **k: 0.0)
    monkeypatch.setenv("CUA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CUA_JUDGE_API_KEY", USER_KEY)
    monkeypatch.setenv(demo.DEMO_KEY_ENV, "stale-key-from-an-earlier-demo")  # restored after the test
    monkeypatch.delenv("CUA_JUDGE_VENV", raising=False)
    return seen


@pytest.fixture
def no_setup(monkeypatch):
    """Skip the env setup and the model build; record which venv the demo asked for."""
    asked: list[Path] = []
    monkeypatch.setattr(demo, "ensure_judge_env", lambda venv, quiet=False: asked.append(venv) or venv)
    monkeypatch.setattr(demo, "ensure_tiny_model", lambda venv, model_dir: model_dir)
    return asked


def test_demo_generates_its_own_key_and_never_hands_over_the_users(launches, no_setup, tmp_path):
    judge = demo.start_demo_judge(model_dir=tmp_path / "m")
    env = launches[0]["env"]
    server_key = env["VLLM_API_KEY"]
    assert server_key not in (USER_KEY, "stale-key-from-an-earlier-demo")
    assert USER_KEY not in env.values()  # not even sitting unused in the server's environment
    assert judge.api_key_env != "CUA_JUDGE_API_KEY"
    assert os.environ[judge.api_key_env] == server_key  # what its client reads
    assert os.environ["CUA_JUDGE_API_KEY"] == USER_KEY  # the user's own setting is untouched
    assert not any(server_key in a for a in launches[0]["cmd"].argv)


def test_score_gives_the_demo_key_to_its_client(monkeypatch):
    from cua_verifier.cli import score_cmd

    class Demo:
        base_url, model, log_path, api_key_env = "http://127.0.0.1:1/v1", "judge", "demo.log", demo.DEMO_KEY_ENV

    monkeypatch.setattr(demo, "start_demo_judge", lambda **kw: Demo())
    monkeypatch.setattr("verifier.judge.make_judge", lambda config: config)
    args = argparse.Namespace(judge_url=None, model=None)
    score_cmd.start_demo(args)
    args.demo_judge = True
    config = score_cmd.build_judge(args)
    assert config.api_key_env == demo.DEMO_KEY_ENV and config.base_urls == [Demo.base_url]


def test_demo_venv_does_not_depend_on_the_working_directory(launches, no_setup, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # e.g. `score` run from a data folder
    demo.start_demo_judge(model_dir=tmp_path / "m")
    assert no_setup == [REPO / ".venv-judge"]
    assert launches[0]["cmd"].argv[0] == str(REPO / ".venv-judge" / "bin" / "python")


def test_default_judge_venv_order(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CUA_JUDGE_VENV", raising=False)
    monkeypatch.setenv("CUA_CACHE_DIR", str(tmp_path / "cache"))
    assert demo.default_judge_venv() == REPO / ".venv-judge"  # a source checkout (tests/run_all.sh)
    monkeypatch.setenv("CUA_JUDGE_VENV", str(tmp_path / "mine"))
    assert demo.default_judge_venv() == tmp_path / "mine"
    monkeypatch.delenv("CUA_JUDGE_VENV")
    monkeypatch.setattr(demo, "SERVING_DIR", tmp_path / "site-packages" / "serving")  # installed from a wheel
    assert demo.repo_root() is None
    assert demo.default_judge_venv() == tmp_path / "cache" / "judge-venv"


def test_setup_judge_env_defaults_to_the_same_venv(monkeypatch, tmp_path):
    """run_all.sh creates the env the e2e fixture and the demo then use, from any directory."""
    calls = []
    monkeypatch.setattr(cli.subprocess, "call", lambda argv: calls.append(argv) or 0)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CUA_JUDGE_VENV", raising=False)
    assert main(["setup-judge-env", "--variant", "cpu"]) == 0
    argv = calls[0]
    assert argv[argv.index("--venv") + 1] == str(REPO / ".venv-judge") and "--cpu" in argv


def test_generated_key_goes_to_a_private_file_not_the_terminal(launches, monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("CUA_JUDGE_API_KEY")
    monkeypatch.setattr(cli.signal, "signal", lambda *a: None)
    assert main(["serve-judge", "--preset", "qwen2.5-vl-7b", "--port", "8123", "--venv", "/opt/j", "--detach"]) == 0
    out, err = capsys.readouterr()
    key = launches[0]["env"]["VLLM_API_KEY"]
    assert key and key not in out and key not in err
    env_file = tmp_path / "cache" / "judge-8123.env"
    assert f"source {env_file}" in out
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    text = env_file.read_text()
    assert f"export CUA_JUDGE_API_KEY={key}\n" in text
    assert "export CUA_JUDGE_URL=http://127.0.0.1:8123/v1\n" in text and "export CUA_JUDGE_MODEL=judge\n" in text


def test_a_key_already_set_is_neither_printed_nor_written(launches, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cli.signal, "signal", lambda *a: None)
    assert main(["serve-judge", "--preset", "qwen2.5-vl-7b", "--port", "8124", "--venv", "/opt/j", "--detach"]) == 0
    out = capsys.readouterr().out
    assert launches[0]["env"]["VLLM_API_KEY"] == USER_KEY
    assert USER_KEY not in out and "already set in this shell" in out
    assert not (tmp_path / "cache" / "judge-8124.env").exists()


def test_env_file_tightens_an_existing_files_permissions(tmp_path):
    from serving.command import ServeConfig
    from serving.presets import get_preset

    path = tmp_path / "judge.env"
    path.write_text("old")
    path.chmod(0o644)
    cli.write_env_file(ServeConfig(preset=get_preset("qwen2.5-vl-7b")), "K", "v a l", path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and "export K='v a l'\n" in path.read_text()
