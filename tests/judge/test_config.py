"""JudgeConfig: environment loading, URL normalisation, and the API key never stored."""
from __future__ import annotations

import pytest

from verifier.errors import ConfigError
from verifier.judge import JudgeConfig, OpenAICompatJudge, make_judge


def test_from_env_reads_replicas_and_model(monkeypatch):
    monkeypatch.setenv("CUA_JUDGE_URL", "http://a:8000/v1, http://b:8001/")
    monkeypatch.setenv("CUA_JUDGE_MODEL", "judge")
    cfg = JudgeConfig.from_env(max_concurrency=3)
    assert cfg.base_urls == ["http://a:8000/v1", "http://b:8001/v1"]  # bare host gets /v1
    assert cfg.model == "judge" and cfg.max_concurrency == 3


def test_from_env_missing_is_a_config_error(monkeypatch):
    monkeypatch.delenv("CUA_JUDGE_URL", raising=False)
    monkeypatch.delenv("CUA_JUDGE_MODEL", raising=False)
    with pytest.raises(ConfigError, match="CUA_JUDGE_URL and CUA_JUDGE_MODEL") as info:
        JudgeConfig.from_env()
    assert "pass --judge-url/--model" in str(info.value)  # the CLI shows this message as is
    monkeypatch.setenv("CUA_JUDGE_URL", "ftp://nope")
    monkeypatch.setenv("CUA_JUDGE_MODEL", "judge")
    with pytest.raises(ConfigError, match="http://host:port/v1"):
        JudgeConfig.from_env()


def test_unknown_fields_are_rejected():
    with pytest.raises(ValueError, match="extra"):
        JudgeConfig(base_urls=["http://a/v1"], model="m", max_concurency=3)


def test_api_key_comes_from_env_and_is_not_in_repr_or_dump(monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-secret-123")
    cfg = JudgeConfig(base_urls=["http://a/v1"], model="m", api_key_env="MY_KEY")
    assert cfg.api_key() == "sk-secret-123"
    judge = make_judge(cfg)
    assert isinstance(judge, OpenAICompatJudge)
    for text in (repr(cfg), str(cfg), cfg.model_dump_json(), repr(judge)):
        assert "sk-secret-123" not in text
    monkeypatch.delenv("MY_KEY")
    assert cfg.api_key() == "EMPTY"


def test_fields_are_documented():
    undocumented = [name for name, f in JudgeConfig.model_fields.items() if not f.description]
    assert undocumented == []
