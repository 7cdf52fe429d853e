"""Issue 38 §8, through a real `serve-reward` on 127.0.0.1: slow uploads hold only what they sent,
liveness apart from readiness, a clean exit on SIGTERM, and the schema of every route."""
from __future__ import annotations

import json
import signal
import socket
import threading
import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytestmark = pytest.mark.slow  # real service processes

from service_helpers import LoopbackJudge, Service, trajectory, verify_in_flight


def _body(traj) -> dict:
    return {"trajectory": traj.model_dump(mode="json")}


def test_slow_uploads_hold_the_bytes_they_sent_not_the_bytes_they_announced():
    """Six uploads announcing 4 MB each and sending a byte every 0.5 s, against a 24 MB byte budget:
    a small request is still admitted at once (before: each reserved its 4 MB up front, so the
    budget was full and the small request got 429 after --admission-wait-s)."""
    with LoopbackJudge() as judge, Service(judge.url, "--max-body-mb", "4", "--max-inflight-mb", "24",
                                           "--admission-wait-s", "5") as svc:
        host, port = svc.url.removeprefix("http://").split(":")
        stop = threading.Event()
        socks = []
        for _ in range(6):
            s = socket.create_connection((host, int(port)), timeout=10)
            s.sendall(b"POST /v1/verify HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 4194304\r\n\r\n{")
            socks.append(s)

        def drip() -> None:
            while not stop.wait(0.5):
                for s in socks:
                    try:
                        s.sendall(b" ")
                    except OSError:
                        pass

        dripper = threading.Thread(target=drip, daemon=True)
        dripper.start()
        try:
            time.sleep(0.5)  # the six are admitted and reading
            start = time.monotonic()
            small = httpx.post(f"{svc.url}/v1/verify", json=_body(trajectory(1)), timeout=30)
            took = time.monotonic() - start
            health = httpx.get(f"{svc.url}/health", timeout=10).json()
        finally:
            stop.set()
            dripper.join(5)
            for s in socks:
                s.close()
    assert small.status_code == 200 and took < 4, (small.status_code, small.text[:200], took)
    assert health["bytes_in_flight"] < 8 * 2**20, health  # six grants of 1 MB, not 6 x 4 MB


def test_readiness_follows_the_judge_and_liveness_does_not():
    """/health (liveness) answers 200 whatever the judge does; /ready is 200 while the judge answers
    and 503 once it is gone (within its 5 s probe cache), with the judge's state in the body.
    Before: /health was the only check and said "ok" with the judge dead."""
    judge = LoopbackJudge().start()
    with Service(judge.url) as svc:
        up = httpx.get(f"{svc.url}/ready", timeout=10)
        judge.stop()
        start, down = time.monotonic(), None
        while time.monotonic() - start < 10:
            down = httpx.get(f"{svc.url}/ready", timeout=10)
            if down.status_code != 200:
                break
            time.sleep(0.5)
        took = time.monotonic() - start
        alive = httpx.get(f"{svc.url}/health", timeout=10)
    assert up.status_code == 200 and up.json()["status"] == "ready", up.text
    assert down is not None and down.status_code == 503 and took < 7, (down.text, took)
    assert down.json()["status"] == "judge_unavailable" and down.headers["retry-after"]
    assert alive.status_code == 200 and alive.json()["status"] == "ok"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_drains_in_flight_work_and_exits_0(sig):
    """SIGTERM (a supervisor's stop) or SIGINT with a verification in flight: it is answered 200,
    and the process exits 0 with no traceback. Before: uvicorn raised the signal again after its
    shutdown, so `serve-reward` died of it (exit -15 / -2), which a supervisor reads as a crash."""
    with LoopbackJudge(latency_s=0.4) as judge:
        svc = Service(judge.url)
        t, got = verify_in_flight(svc, trajectory(1))
        svc.proc.send_signal(sig)
        t.join(60)
        code = svc.proc.wait(60)
        err = svc.proc.stderr.read()  # type: ignore[union-attr]
    assert got and got[0].status_code == 200, got
    assert code == 0 and "Traceback" not in err, (code, err[-2000:])


def test_the_openapi_schema_documents_every_route_and_the_bodies_it_parses_by_hand():
    """/openapi.json (behind the key) has /v1/verify's request body (VerifyRequest) and answers
    (VerificationResult, the error body), and a real request body validates against it. Before:
    no schema was served at all (404)."""
    jsonschema = pytest.importorskip("jsonschema")
    with LoopbackJudge() as judge, Service(judge.url, "--api-key-env", "SL_TEST_KEY",
                                           extra_env={"SL_TEST_KEY": "k"}) as svc:
        closed = httpx.get(f"{svc.url}/openapi.json", timeout=10)
        schema = httpx.get(f"{svc.url}/openapi.json", headers={"Authorization": "Bearer k"}, timeout=10).json()
    assert closed.status_code == 401
    assert {"/health", "/ready", "/metrics", "/v1/verify", "/v1/verify/batch", "/v1/openrlhf"} <= set(schema["paths"])
    verify = schema["paths"]["/v1/verify"]["post"]
    body_ref = verify["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body_ref.endswith("/VerifyRequest")
    assert verify["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/VerificationResult")
    assert verify["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody")
    components = schema["components"]["schemas"]
    body = json.loads(json.dumps(_body(trajectory(1))))
    jsonschema.validate(body, {**components["VerifyRequest"], "components": schema["components"]})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**body, "nope": 1}, components["VerifyRequest"])
