"""One settings model for the CUA_* environment (issue 14, settings item; fast).

The judge URL list is parsed in one place (`verifier.settings.split_urls` / `EnvSettings`), and
every reader (judge config, reward settings, reward functions, CLI flags) agrees on it.
"""
from __future__ import annotations

import argparse

import pytest

from cua_verifier.cli._options import settings_overrides
from reward import RewardSettings, make_uv_rewards
from verifier.judge.config import JudgeConfig
from verifier.settings import EnvSettings, split_urls

MESSY = " http://a:8000/v1 ,, http://b:9000 ,"
CLEAN = ["http://a:8000/v1", "http://b:9000/v1"]


def test_split_urls():
    assert split_urls(MESSY) == ["http://a:8000/v1", "http://b:9000"]
    assert split_urls(["x ", " ", "y"]) == ["x", "y"] and split_urls(None) == [] and split_urls("") == []


def test_env_settings_reads_cua_variables(monkeypatch):
    monkeypatch.setenv("CUA_JUDGE_URL", MESSY)
    monkeypatch.setenv("CUA_JUDGE_MODEL", "judge")
    monkeypatch.setenv("CUA_VERIFIER_CONFIG", " ")
    env = EnvSettings()
    assert env.judge_url == ["http://a:8000/v1", "http://b:9000"] and env.judge_model == "judge"
    assert env.verifier_config is None
    assert env.judge_fields() == {"base_urls": ["http://a:8000/v1", "http://b:9000"], "model": "judge"}
    monkeypatch.delenv("CUA_JUDGE_URL")
    monkeypatch.setenv("CUA_JUDGE_MODEL", "")
    assert EnvSettings().judge_fields() == {}


def test_every_reader_agrees(monkeypatch):
    monkeypatch.setenv("CUA_JUDGE_URL", MESSY)
    monkeypatch.setenv("CUA_JUDGE_MODEL", "judge")
    monkeypatch.delenv("CUA_VERIFIER_CONFIG", raising=False)
    assert JudgeConfig.from_env().base_urls == CLEAN
    assert JudgeConfig(**RewardSettings.from_env().judge).base_urls == CLEAN
    reward = make_uv_rewards(judge_url=MESSY, model="judge").process
    assert JudgeConfig(**reward.settings.judge).base_urls == CLEAN
    args = argparse.Namespace(config=None, votes=None, top_k=None, judge_url=MESSY, model="m", concurrency=None)
    assert JudgeConfig(**settings_overrides(args)["judge"]).base_urls == CLEAN


def test_precedence_flags_over_config_file_over_env(monkeypatch, tmp_path):
    env_file = tmp_path / "env.json"
    env_file.write_text('{"judge": {"base_urls": ["http://file:1/v1"], "model": "file-model", "timeout_s": 7}}')
    monkeypatch.setenv("CUA_VERIFIER_CONFIG", str(env_file))
    monkeypatch.setenv("CUA_JUDGE_URL", "http://env:2/v1")
    monkeypatch.delenv("CUA_JUDGE_MODEL", raising=False)
    s = RewardSettings.from_env()
    assert s.judge == {"base_urls": ["http://env:2/v1"], "model": "file-model", "timeout_s": 7}
    s = RewardSettings.from_env(judge={"base_urls": ["http://flag:3/v1"]})
    assert s.judge["base_urls"] == ["http://flag:3/v1"] and s.judge["timeout_s"] == 7


def test_no_comma_splitting_left_outside_the_settings_module(repo_root):
    """The seven copies of `.split(",")` on a judge URL are gone; only verifier/settings.py parses."""
    offenders = []
    for path in [*repo_root.glob("verifier/**/*.py"), *repo_root.glob("reward/**/*.py"),
                 *repo_root.glob("recipes/**/*.py"), *repo_root.glob("serving/**/*.py")]:
        if path.name == "settings.py" and path.parent.name == "verifier":
            continue
        text = path.read_text()
        for line in text.splitlines():
            if ".split(\",\")" in line and ("url" in line.lower()):
                offenders.append(f"{path.relative_to(repo_root)}: {line.strip()}")
    assert offenders == []


@pytest.mark.parametrize("bad", ["ftp://x", "not a url"])
def test_bad_env_url_is_a_config_error(monkeypatch, bad):
    from verifier.errors import ConfigError

    monkeypatch.setenv("CUA_JUDGE_URL", bad)
    monkeypatch.setenv("CUA_JUDGE_MODEL", "m")
    with pytest.raises(ConfigError, match="judge URL"):
        JudgeConfig.from_env()
