"""Issue 38 §5: a judge outage moves no OpenRLHF advantage.

`/v1/openrlhf` used to give an unscored row 0.0 (the documented default `on_failure="0"`), so every
OpenRLHF run on defaults learned "everything failed" while the judge was down. Now an unscored row
gets the mean of its group's scored rows (of the batch when its group has none): its group-relative
advantage is zero, and the scored rows keep the advantages they have among themselves. When no row
scored there is no neutral number and the service answers 503 with a Retry-After (OpenRLHF's
remote call retries); `on_failure=0` stays available.

Through the real app on a real loopback socket; the pipeline is scripted (`verify_fn`) so that the
rewards differ from row to row and the judge can go down after a given number of verifications.
"""
from __future__ import annotations

import json
import math
import threading

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from live_app import live_service
from service_helpers import no_judge

from verifier.errors import JudgeUnavailableError
from verifier.settings import RewardSettings

PROMPT = "<|im_start|>user\nFind the opening hours of {task}<|im_end|>\n<|im_start|>assistant\n"
JUDGE = {"up_for": 10**9, "seen": 0}
_LOCK = threading.Lock()


async def scripted_verify(trajectory, config=None, *, judge, cache=None):
    """The answer "p=<process> <yes|no>" is its own score; the judge goes down after `up_for` calls."""
    with _LOCK:
        JUDGE["seen"] += 1
        down = JUDGE["seen"] > JUDGE["up_for"]
    if down:
        raise JudgeUnavailableError("connection refused (the judge is down)", stage="rubric")
    process, verdict = trajectory.final_answer.split()
    return {"task_id": trajectory.task.id, "process_score": float(process.removeprefix("p=")),
            "outcome_success": verdict == "yes", "grounded": False, "degraded": [],
            "usage": {"calls": 1, "prompt_tokens": 1, "completion_tokens": 1, "latency_s": 0.0}}


def settings() -> RewardSettings:
    return RewardSettings(verify_fn=scripted_verify, judge_factory=no_judge, cache_factory=None,
                          judge={"base_urls": ["http://127.0.0.1:9/v1"], "model": "scripted"})


# 3 tasks x 4 samples; every reward differs from its group's mean
ANSWERS = {"a": ["p=0.9 yes", "p=0.2 no", "p=0.6 yes", "p=0.4 no"],
           "b": ["p=0.1 no", "p=0.8 yes", "p=0.3 no", "p=0.7 yes"],
           "c": ["p=1.0 yes", "p=0.5 no", "p=0.2 yes", "p=0.9 no"]}


def batch() -> tuple[dict, list[str], list[float]]:
    """The OpenRLHF body, each row's group, and each row's true combined reward."""
    queries, prompts, labels, groups, truth = [], [], [], [], []
    for task, answers in ANSWERS.items():
        prompt = PROMPT.format(task=task)
        for a in answers:
            queries.append(prompt + a + "<|im_end|>")
            prompts.append(prompt)
            labels.append(json.dumps({"id": f"task-{task}", "instruction": f"Find the opening hours of {task}"}))
            groups.append(task)
            p, v = a.split()
            truth.append(0.5 * float(p.removeprefix("p=")) + 0.5 * (v == "yes"))
    return {"query": queries, "prompts": prompts, "labels": labels}, groups, truth


def advantages(rewards: list[float], groups: list[str], how: str) -> list[float]:
    """Group-relative advantages as GRPO (mean-centred, or divided by the group's std) and RLOO
    (leave-one-out baseline) compute them."""
    out = []
    for i, r in enumerate(rewards):
        mates = [rewards[j] for j in range(len(rewards)) if groups[j] == groups[i]]
        mean = sum(mates) / len(mates)
        if how == "grpo":
            out.append(r - mean)
        elif how == "grpo_std":
            std = math.sqrt(sum((m - mean) ** 2 for m in mates) / len(mates))
            out.append((r - mean) / (std + 1e-6))
        else:  # rloo
            out.append(r - (sum(mates) - r) / (len(mates) - 1) if len(mates) > 1 else 0.0)
    return out


@pytest.fixture(autouse=True)
def _judge_up():
    JUDGE.update(up_for=10**9, seen=0)
    yield
    JUDGE.update(up_for=10**9, seen=0)


def test_a_judge_outage_mid_batch_moves_no_advantage():
    body, groups, truth = batch()
    JUDGE["up_for"] = 7  # 7 of 12 verifications answer, then the judge is down: some group is split
    with live_service(settings()) as (url, _service):
        r = httpx.post(f"{url}/v1/openrlhf", json=body, timeout=30)
    assert r.status_code == 200, r.text
    out = r.json()
    rewards, unscored = out["rewards"], [bool(u) for u in out["extra_logs"]["uv_unscored"]]
    assert sum(unscored) == 5, unscored
    split = {g for g, u in zip(groups, unscored, strict=True) if u} & {g for g, u in zip(groups, unscored, strict=True)
                                                                          if not u}
    assert split, "the outage must cut through a group"
    kept = [i for i, u in enumerate(unscored) if not u]
    assert all(rewards[i] == pytest.approx(truth[i]) for i in kept)  # scored rows: their true rewards
    for how in ("grpo", "grpo_std", "rloo"):
        adv = advantages(rewards, groups, how)
        # an unscored row moves nothing (with the old 0.0 it had a large negative advantage)
        assert all(abs(adv[i]) < 1e-6 for i, u in enumerate(unscored) if u), (how, adv, unscored)
        alone = advantages([rewards[i] for i in kept], [groups[i] for i in kept], how)
        if how == "grpo":  # mean-centred: exactly the advantages of the batch without the unscored rows
            assert [adv[i] for i in kept] == pytest.approx(alone)
        else:  # std- or leave-one-out-scaled by the group's size: the same direction for every row
            assert all((adv[i] > 0) == (a > 0) for i, a in zip(kept, alone, strict=True) if abs(a) > 1e-9)


def test_with_nothing_scored_the_answer_is_503_with_retry_after_and_0_stays_an_explicit_option():
    body, _groups, _truth = batch()
    JUDGE["up_for"] = 0  # down for the whole batch: there is no neutral number to give
    with live_service(settings()) as (url, _service):
        down = httpx.post(f"{url}/v1/openrlhf", json=body, timeout=30)
        zero = httpx.post(f"{url}/v1/openrlhf?on_failure=0", json=body, timeout=30)
        bad = httpx.post(f"{url}/v1/openrlhf", json={"query": ["x"], "prompts": ["p"], "labels": [""]}, timeout=30)
    assert down.status_code == 503, down.text
    assert int(down.headers["Retry-After"]) >= 1 and "JudgeUnavailableError" in down.json()["error"]["message"]
    assert zero.status_code == 200 and zero.json()["rewards"] == [0.0] * 12
    assert zero.json()["extra_logs"]["uv_unscored"] == [1.0] * 12  # still flagged
    assert bad.status_code == 422, bad.text  # bad input throughout: retrying cannot help
