"""OpenRLHF's remote reward model and verl's compute_score, against the service as a real process."""
from __future__ import annotations

import json

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytestmark = pytest.mark.slow  # real service processes

from service_helpers import LoopbackJudge, Service, trajectory

from reward.openrlhf import make_reward_func
from reward.remote import RemoteError

TASK = json.dumps({"id": "hours", "instruction": "Find the library's opening hours"})
PROMPT = "<|im_start|>user\nFind the library's opening hours<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def service():
    with LoopbackJudge() as judge, Service(judge.url) as svc:
        yield judge, svc


def test_openrlhf_reward_func_and_url_form(service):
    judge, svc = service
    before = judge.rubric_calls
    func = make_reward_func(svc.url, on_failure="0.0")
    out = func([PROMPT + "9 to 5", PROMPT + "closed", "x"], [PROMPT, PROMPT, ""], [TASK, TASK, ""])
    rewards = out["rewards"].tolist() if hasattr(out["rewards"], "tolist") else out["rewards"]
    unscored = out["extra_logs"]["uv_unscored"]
    assert len(rewards) == 3 and list(map(float, unscored)) == [0.0, 0.0, 1.0]
    assert float(rewards[2]) == 0.0  # the fill value, flagged as unscored
    assert judge.rubric_calls - before == 1  # two rollouts of one task: one rubric
    assert list(map(float, out["extra_logs"]["uv_grounded"])) == [0.0, 0.0, 0.0]  # text rows: action-only
    with pytest.raises(RemoteError, match="row 1: TrajectoryError") as info:
        make_reward_func(svc.url, on_failure="error")([PROMPT + "a", "x"], [PROMPT, ""], [TASK, ""])
    assert info.value.status == 422  # bad input: OpenRLHF does not retry it as it would a 502
    bad = httpx.post(f"{svc.url}/v1/openrlhf?on_failure=error", timeout=120,
                     json={"query": ["x"], "prompts": [""], "labels": [""]})
    assert bad.status_code == 422, bad.text
    refused = make_reward_func(svc.url, require_screenshots=True, on_failure="0")([PROMPT + "9 to 5"], [PROMPT], [TASK])
    assert list(map(float, refused["extra_logs"]["uv_unscored"])) == [1.0]  # text-only row refused
    with pytest.raises(RemoteError) as info:  # by default: no row scored, so no mean to fill with
        make_reward_func(svc.url, require_screenshots=True)([PROMPT + "9 to 5"], [PROMPT], [TASK])
    assert info.value.status == 422
    # OpenRLHF's own request (remote_rm_fn_ray posts exactly this body to --remote_rm_url)
    direct = httpx.post(f"{svc.url}/v1/openrlhf?reward=outcome", timeout=120,
                        json={"query": [PROMPT + "9 to 5"], "prompts": [PROMPT], "labels": [TASK]})
    assert direct.status_code == 200
    body = direct.json()
    assert body["rewards"] == body["scores"] and body["rewards"][0] in (0.0, 1.0)


def test_verl_compute_score_returns_the_same_keys_every_call(service, monkeypatch):
    from reward.verl import compute_score

    _judge, svc = service
    monkeypatch.setenv("CUA_REWARD_URL", svc.url)
    monkeypatch.setenv("CUA_VERL_ON_FAILURE", "0")
    good = compute_score("cua", "9 to 5", TASK, extra_info={})
    bad = compute_score("cua", "9 to 5", "", extra_info=None)
    assert set(good) == set(bad) == {"score", "uv_process", "uv_outcome", "uv_unscored", "uv_grounded"}
    assert good["uv_grounded"] == 0.0  # an answer without screenshots: action-only, and it says so
    shots = compute_score("cua", "", TASK, extra_info={"trajectory": trajectory(1).model_dump(mode="json")})
    assert shots["uv_grounded"] == 1.0 and shots["uv_unscored"] == 0.0  # the recorded screenshots were judged
    outcome = compute_score("cua", "9 to 5", TASK, extra_info={}, reward="outcome")
    assert outcome["score"] == outcome["uv_outcome"]
    assert good["uv_unscored"] == 0.0 and 0.0 <= good["score"] <= 1.0
    assert bad["uv_unscored"] == 1.0 and bad["score"] == 0.0
    monkeypatch.setenv("CUA_VERL_ON_FAILURE", "error")
    with pytest.raises(RemoteError):
        compute_score("cua", "9 to 5", "", extra_info=None)
    # issue 20 W4: unset, the default is "error" too: an outage must never become a reward of 0.0
    monkeypatch.delenv("CUA_VERL_ON_FAILURE")
    with pytest.raises(RemoteError):
        compute_score("cua", "9 to 5", "", extra_info=None)
