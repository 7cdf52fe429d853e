"""The judge health check against the real vLLM server (engine tier).

`score`, `score-dataset` and `bench` probe GET /v1/models before any work: a real server with the
right key passes, a wrong key is named as such, and a stopped server is "unreachable".
"""
from __future__ import annotations

import os

import pytest

from cua_verifier.cli._preflight import check_judge
from verifier.errors import JudgeUnavailableError
from verifier.judge import make_judge

pytestmark = pytest.mark.engine


def test_health_check_against_the_real_server(engine, monkeypatch):
    check_judge(make_judge(engine.judge_config()))  # right key: passes
    monkeypatch.setenv("CUA_E2E_WRONG_KEY", "not-the-key")
    with pytest.raises(JudgeUnavailableError, match="API key was rejected"):
        check_judge(make_judge(engine.judge_config(api_key_env="CUA_E2E_WRONG_KEY")))
    assert os.environ.get("CUA_E2E_JUDGE_KEY")  # the fixture's own key is untouched
