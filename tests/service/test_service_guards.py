"""Fast tests of the service's guards that planted one-line bugs got past (issue 38 §10).

Until now these were caught only by slow tests (or by nothing, or by a hang): a batch bounded by
`--max-batch` alone (a batch over `--queue-size` got 429 for ever), the chunked body's total,
/metrics without the key, the queue slot released when a verification ends, a judge outage not
kept as the rollout's answer, and an open circuit answered 503 with its probe time as Retry-After.
The app runs under a real uvicorn server on a loopback socket (`live_app`), with the pipeline
scripted (`verify_fn`), so each test takes a fraction of a second.
"""
from __future__ import annotations

import asyncio
import json
import threading

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from live_app import live_service
from service_helpers import no_judge

from serving.reward_service.app import create_app
from serving.reward_service.config import ServiceConfig
from serving.reward_service.core import RewardService
from verifier.errors import JudgeCircuitOpenError, JudgeUnavailableError
from verifier.settings import RewardSettings

_SEEN: dict[str, int] = {}
_LOCK = threading.Lock()


async def scripted_verify(trajectory, config=None, *, judge, cache=None):
    """The final answer says what the judge does: "circuit" (open), "down-once" (unreachable the
    first time, then back), anything else a score."""
    with _LOCK:
        _SEEN[trajectory.final_answer] = _SEEN.get(trajectory.final_answer, 0) + 1
        seen = _SEEN[trajectory.final_answer]
    if trajectory.final_answer == "circuit":
        raise JudgeCircuitOpenError("circuit open for every endpoint", retry_in_s=7.2, stage="rubric")
    if trajectory.final_answer == "down-once" and seen == 1:
        raise JudgeUnavailableError("connection refused", stage="rubric")
    return {"task_id": trajectory.task.id, "process_score": 0.5, "outcome_success": True, "grounded": False,
            "degraded": [], "usage": {"calls": 1, "prompt_tokens": 1, "completion_tokens": 1, "latency_s": 0.0}}


def settings() -> RewardSettings:
    return RewardSettings(verify_fn=scripted_verify, judge_factory=no_judge, cache_factory=None,
                          judge={"base_urls": ["http://127.0.0.1:9/v1"], "model": "scripted"})


def record(answer: str) -> dict:
    return {"task": {"id": "t", "instruction": "Find the price"}, "steps": [{"index": 1, "action": "click"}],
            "final_answer": answer}


@pytest.fixture(autouse=True)
def _fresh():
    _SEEN.clear()
    yield
    _SEEN.clear()


def test_a_batch_over_the_queue_is_413_not_429_for_ever():
    with live_service(settings(), ServiceConfig(queue_size=2, max_batch=8)) as (url, _svc):
        over = httpx.post(f"{url}/v1/verify/batch", json={"trajectories": [record(f"a{k}") for k in range(3)]})
        fits = httpx.post(f"{url}/v1/verify/batch", json={"trajectories": [record(f"b{k}") for k in range(2)]})
    assert over.status_code == 413 and "--queue-size 2" in over.json()["error"]["message"], over.text
    assert fits.status_code == 200 and [r["status"] for r in fits.json()["results"]] == ["scored"] * 2


def test_every_slot_is_given_back_when_its_verification_ends():
    with live_service(settings(), ServiceConfig(queue_size=2)) as (url, _svc):
        codes = [httpx.post(f"{url}/v1/verify", json={"trajectory": record(f"r{k}")}).status_code for k in range(5)]
        bad = [httpx.post(f"{url}/v1/verify", json={"trajectory": {"task": {"id": "t"}}}).status_code for _ in range(3)]
        last = httpx.post(f"{url}/v1/verify", json={"trajectory": record("last")}).status_code
        depth = httpx.get(f"{url}/health").json()["queue_depth"]
    # 5 rollouts through a queue of 2, one after the other, then 3 that fail to parse (never handed
    # to a verification): each gave its slot back
    assert codes == [200] * 5 and bad == [422] * 3 and last == 200 and depth == 0


def test_metrics_need_the_key_health_does_not(monkeypatch):
    monkeypatch.setenv("SR_GUARD_KEY", "s3cret")
    with live_service(settings(), ServiceConfig(api_key_env="SR_GUARD_KEY")) as (url, _svc):
        anon = httpx.get(f"{url}/metrics")
        keyed = httpx.get(f"{url}/metrics", headers={"Authorization": "Bearer s3cret"})
        health = httpx.get(f"{url}/health")
    assert anon.status_code == 401 and "cua_reward" not in anon.text
    assert keyed.status_code == 200 and "cua_reward" in keyed.text
    assert health.status_code == 200


def test_an_outage_is_503_and_not_kept_so_the_retry_is_scored():
    with live_service(settings()) as (url, _svc):
        first = httpx.post(f"{url}/v1/verify", json={"trajectory": record("down-once")})
        again = httpx.post(f"{url}/v1/verify", json={"trajectory": record("down-once")})
    assert first.status_code == 503 and int(first.headers["Retry-After"]) >= 1, first.text
    assert again.status_code == 200 and again.json()["process_score"] == 0.5, again.text
    assert _SEEN["down-once"] == 2  # the retry reached the judge again


def test_an_open_circuit_is_503_with_the_probes_time_as_retry_after():
    with live_service(settings()) as (url, _svc):
        r = httpx.post(f"{url}/v1/verify", json={"trajectory": record("circuit")})
        batch = httpx.post(f"{url}/v1/verify/batch", json={"trajectories": [record("circuit")]})
    assert r.status_code == 503 and r.json()["error"]["type"] == "JudgeCircuitOpenError", r.text
    assert r.headers["Retry-After"] == "8"  # ceil(7.2 s) until the half-open probe
    (item,) = batch.json()["results"]
    assert (item["http_status"], item["retry_after"]) == (503, 8)


async def _asgi_post(app, chunks: list[bytes], *, chunked: bool) -> int:
    """POST /v1/verify to the ASGI app, its body in `chunks` (one receive message each, as uvicorn
    hands a chunked upload over); the response status."""
    headers = [(b"content-type", b"application/json")]
    headers.append((b"transfer-encoding", b"chunked") if chunked else
                   (b"content-length", str(sum(map(len, chunks))).encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/v1/verify", "raw_path": b"/v1/verify", "query_string": b"",
             "root_path": "", "headers": headers, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2)}
    messages = [{"type": "http.request", "body": c, "more_body": k + 1 < len(chunks)} for k, c in enumerate(chunks)]
    sent: list[dict] = []

    async def receive() -> dict:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


def test_a_chunked_body_is_held_to_the_limit_on_its_total():
    config = ServiceConfig(max_body_bytes=10_000)
    service = RewardService(settings(), config)
    app = create_app(settings(), config, service)
    body = json.dumps({"trajectory": record("x" * 3000)}).encode()
    assert len(body) < 10_000
    small = [body[k:k + 2000] for k in range(0, len(body), 2000)]
    big = json.dumps({"trajectory": record("y" * 16_000)}).encode()
    pieces = [big[k:k + 2000] for k in range(0, len(big), 2000)]  # every piece under the limit, the total over it
    codes = asyncio.run(_asgi_post(app, small, chunked=True)), asyncio.run(_asgi_post(app, pieces, chunked=True))
    assert codes == (200, 413)
