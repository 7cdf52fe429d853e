"""Issue 38 §5: what an unscored OpenRLHF row is given carries no signal (reward.unscored_fill),
in the service's answer and in the browser agent that scores one episode at a time."""
from __future__ import annotations

import asyncio
import importlib
import json
import sys
import types

import pytest

from reward.client import RemoteError
from reward.openrlhf import rewards_from_items
from reward.unscored_fill import NoneScored, RunningMeans, fill_policy, fill_rows, group_key


def test_a_gap_takes_its_groups_mean_else_the_batchs_and_none_scored_is_said():
    assert fill_rows([1.0, None, 0.0, None, None], ["a", "a", "a", "b", "b"]) == [1.0, 0.5, 0.0, 0.5, 0.5]
    assert fill_rows([0.2, None, 0.6], None) == pytest.approx([0.2, 0.4, 0.6])
    assert fill_rows([], None) == []
    with pytest.raises(NoneScored):
        fill_rows([None, None], ["a", "b"])
    assert fill_policy("mean") == "mean" and fill_policy("error") is None and fill_policy("0") == 0.0
    with pytest.raises(ValueError, match="on_failure"):
        fill_policy("zero")


def test_rows_group_by_task_then_label_then_prompt():
    rec = {"task": {"id": "t1"}}
    assert group_key("p", "whatever", rec) == group_key("q", None, {"task": {"id": "t1"}})
    assert group_key("p", json.dumps({"id": "t2"}), ValueError()) == ("task", "t2")
    assert group_key("p", "find the hours", ValueError()) == ("instruction", "find the hours")
    assert group_key("p", None, ValueError()) == ("prompt", "p")


def test_the_service_answer_fills_each_kind_and_flags_the_row():
    ok = {"status": "scored", "result": {"process_score": 0.8, "outcome_success": True, "grounded": True}}
    low = {"status": "scored", "result": {"process_score": 0.2, "outcome_success": False, "grounded": True}}
    down = {"status": "unscored", "error_type": "JudgeUnavailableError", "reason": "refused", "http_status": 503,
            "retry_after": 2}
    out = rewards_from_items([ok, low, down], groups=["g", "g", "g"])
    assert out["rewards"] == pytest.approx([0.9, 0.1, 0.5]) and out["extra_logs"]["uv_unscored"] == [0.0, 0.0, 1.0]
    assert out["extra_logs"]["uv_process"][2] == pytest.approx(0.5)
    with pytest.raises(RemoteError) as info:
        rewards_from_items([down, down])
    assert info.value.status == 503 and info.value.retry_after == 2.0
    assert rewards_from_items([down], on_failure="0")["rewards"] == [0.0]


def _agent_module(monkeypatch):
    """browser_env.openrlhf_agent with OpenRLHF's base classes stubbed (OpenRLHF is not installed here)."""
    pytest.importorskip("torch")
    stub = types.ModuleType("openrlhf.utils.agent")
    stub.AgentInstanceBase = type("AgentInstanceBase", (), {})
    stub.MultiTurnAgentExecutor = type("MultiTurnAgentExecutor", (), {"__init__": lambda self, cls: None})
    for name in ("openrlhf", "openrlhf.utils"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "openrlhf.utils.agent", stub)
    monkeypatch.delitem(sys.modules, "browser_env.openrlhf_agent", raising=False)
    monkeypatch.setattr("browser_env.frameworks.require_tested", lambda dist, **kw: "0.11.2")  # no OpenRLHF here
    return importlib.import_module("browser_env.openrlhf_agent")


def test_the_browser_agent_fills_an_unscored_episode_with_its_tasks_recent_mean(monkeypatch):
    agent = _agent_module(monkeypatch)
    monkeypatch.delenv("CUA_OPENRLHF_ON_FAILURE", raising=False)
    monkeypatch.setattr(agent, "_SCORED", RunningMeans(), raising=False)
    replies: list = [0.8, 0.4, RemoteError("judge down", status=503)]
    sent: list = []

    async def post(body, params=None, url=None):
        sent.append(params)
        reply = replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return {"rewards": [reply], "extra_logs": {"uv_process": [reply], "uv_outcome": [1.0], "uv_unscored": [0.0],
                                                    "uv_grounded": [1.0]}}

    class Episode:
        async def trajectory(self):
            return {"task": {"id": "shop-1"}, "steps": [], "screenshots": []}

    monkeypatch.setattr(agent, "apost_openrlhf", post)
    inst = agent.AgentInstance.__new__(agent.AgentInstance)
    inst.episode, inst.settings = Episode(), agent.AgentSettings()
    assert inst.settings.on_failure == "mean"  # the default: an unscored episode carries no signal
    got = [asyncio.run(inst._reward()) for _ in range(3)]
    assert [g[0] for g in got[:2]] == [0.8, 0.4]
    reward, logs = got[2]
    assert reward == pytest.approx(0.6) and logs["uv_unscored"] == 1.0  # the task's mean, flagged: never 0
    assert {p["on_failure"] for p in sent} == {"error"}  # failures come back to be filled here
    monkeypatch.setenv("CUA_OPENRLHF_ON_FAILURE", "0")  # the explicit number stays available
    inst.settings = agent.AgentSettings()
    replies.append(RemoteError("judge down", status=503))
    assert asyncio.run(inst._reward())[0] == 0.0
