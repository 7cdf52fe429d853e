"""The verl and OpenRLHF adapters and their shared service client, against a scripted HTTP service:
retries (Retry-After inside the deadline), per-run options, numpy labels, chat markup, grounding."""
from __future__ import annotations

import asyncio
import json
import time

import numpy as np
import pytest
import reward_fakes
from scripted_service import SCORED, ScriptedService

from reward import RewardSettings, UVOutcomeReward
from reward.client import ClientSettings, RemoteError, apost, async_client, post
from reward.openrlhf import make_reward_func, records_from_request, response_of, rewards_from_items
from reward.verl import compute_score, compute_score_async
from verifier.errors import TrajectoryError

TASK = json.dumps({"id": "hours", "instruction": "Find the opening hours"})
BUSY = {"error": {"type": "judge_unavailable", "message": "breaker open"}}
CHATML = "<|im_start|>user\nFind the opening hours<|im_end|>\n<|im_start|>assistant\n"


def test_503_is_retried_after_its_retry_after_and_counted():
    with ScriptedService([(503, BUSY, {"Retry-After": "0.3"}), (200, SCORED, {})]) as svc:
        retries: dict[str, int] = {}
        t0 = time.monotonic()
        out = post(ClientSettings(url=svc.url), "/v1/openrlhf", {"query": ["x"]}, retries=retries)
        took = time.monotonic() - t0
    assert out == SCORED and len(svc.requests) == 2 and retries == {"503": 1}
    assert 0.3 <= took < 2.0, took


def test_a_wait_past_the_request_deadline_is_not_started():
    """The service says 'come back in 30 s' but the request has 1 s: give up now, typed."""
    with ScriptedService([(429, BUSY, {"Retry-After": "30"})]) as svc:
        t0 = time.monotonic()
        with pytest.raises(RemoteError, match="gave up after 1 attempts") as info:
            post(ClientSettings(url=svc.url, deadline_s=1.0), "/v1/openrlhf", {"query": ["x"]})
    assert time.monotonic() - t0 < 1.0 and len(svc.requests) == 1
    assert info.value.error_type == "ServiceUnavailable" and info.value.status == 429


def test_a_client_error_is_not_retried_and_keeps_the_service_type():
    reply = {"error": {"type": "invalid_request", "message": "row 0: no task"}}
    with ScriptedService([(422, reply, {})]) as svc, pytest.raises(RemoteError, match="row 0: no task") as info:
        post(ClientSettings(url=svc.url), "/v1/openrlhf", {"query": ["x"]})
    assert info.value.status == 422 and info.value.error_type == "invalid_request" and len(svc.requests) == 1


def test_connection_refused_is_retried_then_typed():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = ClientSettings(url=f"http://127.0.0.1:{port}", max_retries=2, deadline_s=30)
    retries: dict[str, int] = {}
    with pytest.raises(RemoteError, match="gave up after 3 attempts"):
        post(settings, "/v1/openrlhf", {"query": ["x"]}, retries=retries)
    assert retries == {"connect": 2}


async def test_async_client_honours_retry_after_too():
    with ScriptedService([(503, BUSY, {"Retry-After": "0.2"}), (200, SCORED, {})]) as svc:
        settings = ClientSettings(url=svc.url)
        client = async_client(settings)
        try:
            out = await apost(settings, client, "/v1/openrlhf", {"query": ["x"]})
        finally:
            await client.aclose()
    assert out == SCORED and len(svc.requests) == 2


# ---- verl ---------------------------------------------------------------------------------------
def test_verl_reward_kwargs_win_over_the_environment(monkeypatch):
    """verl merges `reward_kwargs` into the call: `reward="outcome"` must be what is asked for."""
    monkeypatch.setenv("CUA_VERL_REWARD", "process")
    monkeypatch.setenv("CUA_VERL_ON_FAILURE", "error")
    with ScriptedService([(200, SCORED, {})]) as svc:
        out = compute_score("cua", "9 to 5", TASK, {}, reward="outcome", on_failure=0, url=svc.url)
        compute_score("cua", "9 to 5", TASK, {}, url=svc.url)  # no kwargs: the environment
    assert svc.requests[0]["params"] == {"reward": "outcome", "on_failure": "0"}
    assert svc.requests[1]["params"] == {"reward": "process", "on_failure": "error"}
    assert out == {"score": 0.75, "uv_process": 0.5, "uv_outcome": 1.0, "uv_unscored": 0.0, "uv_grounded": 1.0}


@pytest.mark.parametrize("truth", [np.array(TASK, dtype=object), np.str_(TASK), np.array([TASK], dtype=object),
                                   {"task": np.array(["a"], dtype=object)}])
def test_verl_accepts_numpy_ground_truth(truth):
    with ScriptedService([(200, SCORED, {})]) as svc:
        compute_score("cua", "9 to 5", truth, None, url=svc.url)
    (label,) = svc.requests[0]["json"]["labels"]
    expected = {"task": ["a"]} if isinstance(truth, dict) else json.loads(TASK)
    assert json.loads(label) == expected


def test_verl_recorded_trajectory_is_sent_as_the_label():
    traj = {"task": {"id": "t", "instruction": "x"}, "steps": [], "screenshots": []}
    with ScriptedService([(200, SCORED, {})]) as svc:
        compute_score("cua", "ignored", TASK, {"trajectory": traj}, url=svc.url)
    assert json.loads(svc.requests[0]["json"]["labels"][0]) == {"trajectory": traj}


def test_verl_async_score_runs_on_the_loop_without_threads(monkeypatch):
    def no_threads(*a, **k):
        raise AssertionError("compute_score_async must not hop to a thread")

    monkeypatch.setattr(asyncio, "to_thread", no_threads)

    async def main() -> list:
        return await asyncio.gather(*(compute_score_async("cua", f"a{i}", TASK, None, url=svc.url)
                                      for i in range(3)))

    with ScriptedService([(200, SCORED, {})]) as svc:
        got = asyncio.run(main())
    assert [g["score"] for g in got] == [0.75] * 3 and len(svc.requests) == 3


# ---- OpenRLHF -----------------------------------------------------------------------------------
def test_openrlhf_reward_func_defaults_to_the_groups_mean():
    """OpenRLHF swallows a reward function's exception, so the default is a number the service
    fills in: the mean of the row's group (issue 38 §5: never 0, which taught "it failed")."""
    with ScriptedService([(200, SCORED, {})]) as svc:
        make_reward_func(svc.url)([CHATML + "9 to 5<|im_end|>"], [CHATML], [TASK])
    assert svc.requests[0]["params"]["on_failure"] == "mean"


def test_chat_special_tokens_are_not_part_of_the_answer():
    (rec,) = records_from_request([CHATML + "Open 9 to 5.<|im_end|><|endoftext|>"], [CHATML], [TASK])
    assert rec["final_answer"] == "Open 9 to 5."


def test_a_prompt_that_is_not_a_prefix_never_makes_the_transcript_the_answer():
    retokenised = CHATML.replace("\n", " \n")  # a decode/encode round trip changed the whitespace
    query = CHATML + "Open 9 to 5.<|im_end|>"
    (rec,) = records_from_request([query], [retokenised], [TASK])
    assert rec["final_answer"] == "Open 9 to 5."
    (err,) = records_from_request(["User: find the hours. Agent: open 9 to 5"], ["User: Find"], [TASK])
    assert isinstance(err, TrajectoryError) and "not a prefix" in str(err)
    assert response_of("Open 9 to 5.</s>", "") == "Open 9 to 5."


def test_bad_input_is_a_422_and_every_row_says_whether_it_was_grounded():
    bad = {"status": "error", "error_type": "TrajectoryError", "reason": "no task", "http_status": 422}
    ok = {"status": "scored", "result": {"process_score": 1.0, "outcome_success": True, "grounded": True}}
    words = {"status": "scored", "result": {"process_score": 1.0, "outcome_success": True, "grounded": False}}
    with pytest.raises(RemoteError) as info:
        rewards_from_items([ok, bad], on_failure="error")
    assert info.value.status == 422
    out = rewards_from_items([ok, words, bad], on_failure="0")
    assert out["extra_logs"]["uv_grounded"] == [1.0, 0.0, 0.0]
    assert out["extra_logs"]["uv_unscored"] == [0.0, 0.0, 1.0] and out["rewards"][2] == 0.0


# ---- TRL (in-process): the same flag, and the switch to refuse ungrounded rows ------------------
def _settings(**kw) -> RewardSettings:
    return RewardSettings(verify_fn=reward_fakes.fake_verify, judge_factory=reward_fakes.fake_judge,
                          cache_factory=None, strict=True, **kw)


async def test_trl_logs_uv_grounded_and_can_refuse_text_only_rows():
    prompts = [[{"role": "user", "content": "Find the opening hours"}]] * 2
    completions = [[{"role": "assistant", "content": "9 to 5"}], [{"role": "assistant", "content": "10 to 6"}]]
    metrics: dict = {}
    extra: dict = {}
    got = await UVOutcomeReward(_settings())(prompts, completions, log_metric=metrics.__setitem__,
                                             log_extra=extra.__setitem__)
    assert got == [1.0, 1.0] and metrics["uv_grounded"] == 0.0 and extra["uv_outcome/uv_grounded"] == [0.0, 0.0]
    refused = await UVOutcomeReward(_settings(require_screenshots=True))(prompts, completions,
                                                                         log_extra=extra.__setitem__)
    assert refused == [None, None]
    assert all("no screenshots" in r for r in extra["uv_outcome/unscored_reason"])
