"""Issue 38 §1, §2: what an unauthenticated client can make the service hold, through a real
`serve-reward` on 127.0.0.1: metric series (labelled by route, never by the raw path), and headers
(bounded in size and in the time to finish them)."""
from __future__ import annotations

import random
import socket
import string
import threading
import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
psutil = pytest.importorskip("psutil")
pytestmark = pytest.mark.slow  # real service processes

from service_helpers import LoopbackJudge, Service

KEY = {"Authorization": "Bearer s3cret"}


@pytest.fixture
def svc():
    with LoopbackJudge() as judge, Service(judge.url, "--api-key-env", "SX_TEST_KEY",
                                           extra_env={"SX_TEST_KEY": "s3cret"}) as s:
        yield s


def _series(text: str) -> int:
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def test_random_paths_add_no_metric_series(svc):
    """2,000 random paths, half of them without the key (401), half with it (404): no new series,
    and /metrics stays the same size. Before: 19 series per path (a counter and a histogram)."""
    rng = random.Random(38)

    def paths(n: int) -> list[str]:
        return ["/" + "".join(rng.choices(string.ascii_letters + "/", k=16)) for _ in range(n)]

    with httpx.Client(base_url=svc.url, timeout=30) as c:
        for k, p in enumerate(paths(10)):  # the `other` series exist from here on
            c.get(p, headers=KEY if k % 2 else {})
        c.get("/metrics", headers=KEY)  # and /metrics's own
        before = c.get("/metrics", headers=KEY).text
        codes = {c.get(p, headers=KEY if k % 2 else {}).status_code for k, p in enumerate(paths(2000))}
        after = c.get("/metrics", headers=KEY).text
    assert codes == {401, 404}
    assert _series(after) == _series(before), (_series(before), _series(after))
    assert len(after) < len(before) + 2000, (len(before), len(after))  # counts grow, labels do not
    assert 'endpoint="other",status="401"' in after and 'endpoint="other",status="404"' in after
    assert 'endpoint="/metrics"' in after  # real routes keep their own label


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=15)


def _answer_or_drop(sock: socket.socket, wait_s: float) -> tuple[bytes | None, float]:
    """What the server sent (b"" for a plain close, None if it still held the connection open after
    `wait_s`), and when."""
    start = time.monotonic()
    sock.settimeout(wait_s)
    try:
        data = sock.recv(200)
    except TimeoutError:
        return None, wait_s
    except OSError:
        data = b""
    return data, time.monotonic() - start


def test_huge_request_heads_are_refused_in_bounded_memory(svc):
    """20 connections each sending a 16 MB header: each is answered 431 (or closed) within 5 s
    and the service's RSS grows by under 40 MB. Before: 87 -> 458 MB, none dropped in 90 s."""
    proc = psutil.Process(svc.proc.pid)
    base, peak = proc.memory_info().rss, 0
    socks = [_connect(svc.url) for _ in range(20)]

    def flood(sock: socket.socket) -> None:
        try:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\nX-Big: ")
            for _ in range(256):  # 16 MB
                sock.sendall(b"a" * 65536)
        except OSError:
            pass  # dropped: what the test wants

    threads = [threading.Thread(target=flood, args=(s,), daemon=True) for s in socks]
    start = time.monotonic()
    for t in threads:
        t.start()
    answers = []
    for s in socks:
        data, _ = _answer_or_drop(s, max(0.1, start + 5 - time.monotonic()))
        answers.append(data)
        peak = max(peak, proc.memory_info().rss)
    took = time.monotonic() - start
    for s in socks:
        s.close()
    assert all(a is not None for a in answers) and took < 6, (took, answers)
    assert any(a and a.startswith(b"HTTP/1.1 431") for a in answers), answers
    assert (peak - base) < 40 * 2**20, (base / 2**20, peak / 2**20)
    assert httpx.get(f"{svc.url}/health", timeout=10).status_code == 200  # still serving


def test_slow_and_silent_request_heads_are_dropped_after_the_head_timeout():
    """A header sent a byte at a time, and a connection that sends nothing, are dropped once
    --header-timeout-s (1 s here) has passed, not held open for as long as the client likes."""
    with LoopbackJudge() as judge, Service(judge.url, "--header-timeout-s", "1") as svc:
        slow, silent = _connect(svc.url), _connect(svc.url)
        slow.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\n")
        start, answer = time.monotonic(), None
        try:
            while time.monotonic() - start < 8:
                slow.sendall(b"X")
                slow.settimeout(0.25)
                try:
                    answer = slow.recv(200)
                    break
                except TimeoutError:
                    continue
        except OSError:
            answer = b""
        took = time.monotonic() - start
        quiet, quiet_took = _answer_or_drop(silent, 8)
        slow.close()
        silent.close()
    assert answer is not None and answer.startswith(b"HTTP/1.1 408") and 0.8 < took < 3, (answer, took)
    assert quiet == b"" and quiet_took < 3, (quiet, quiet_took)


def test_a_refused_upload_sees_its_answer_and_is_not_read_to_its_end(svc):
    """A wrong key on a body declared at 10 GB, sent at up to 64 MB/s: the client reads the 401, and
    the server stops taking the body within its linger (2 s), with a FIN after the answer, instead
    of reading all of it (before: the whole body was read, and parsed, for an unauthenticated
    client; one that sent past its length, or that the server closed on, got a reset)."""
    sock = _connect(svc.url)
    sock.sendall(b"POST /v1/verify HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer wrong\r\n"
                 b"Content-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n")
    stopped = {}

    def pump() -> None:
        start = time.monotonic()
        try:
            while time.monotonic() - start < 8:
                sock.sendall(b" " * 65536)
                time.sleep(0.001)
        except OSError as exc:
            stopped["after"], stopped["error"] = time.monotonic() - start, exc

    sender = threading.Thread(target=pump, daemon=True)
    sender.start()
    answer, _ = _answer_or_drop(sock, 10)
    sender.join(15)
    sock.close()
    assert answer is not None and answer.startswith(b"HTTP/1.1 401"), answer
    assert b"connection: close" in answer.lower() or "after" in stopped
    assert stopped.get("after", 99) < 6, stopped


def test_ray_serves_proxy_gets_the_same_head_bounds(monkeypatch):
    """Ray Serve builds its proxy's uvicorn.Config without `http=`; the gate's callback makes that
    default the bounded protocol in the proxy's process. A real uvicorn server configured as Ray
    configures it, with the gate as its middleware: a huge head is answered 431, and a refused
    upload closes after the answer (lingering). Before: only the single-process service was bounded."""
    import asyncio

    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from uvicorn import config as uvicorn_config

    from serving.reward_service import serve_gate

    monkeypatch.setitem(uvicorn_config.HTTP_PROTOCOLS, "auto", uvicorn_config.HTTP_PROTOCOLS["auto"])
    monkeypatch.setenv(serve_gate.GATE_ENV, serve_gate.gate_settings(
        "SX_PROXY_KEY", 1024, 5.0, {"max_head_bytes": 8192, "head_timeout_s": 1.0, "linger_s": 1.0}))
    monkeypatch.setenv("SX_PROXY_KEY", "s3cret")
    app = Starlette(routes=[], middleware=serve_gate.proxy_middlewares())
    app.add_route("/health", lambda _r: PlainTextResponse("ok"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(lambda: app, factory=True, lifespan="off", log_level="critical"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}"
        huge = _connect(url)
        try:
            huge.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 65536)
        except OSError:
            pass
        answer, took = _answer_or_drop(huge, 5)
        huge.close()
        refused = _connect(url)
        refused.sendall(b"POST /v1/verify HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n{")
        no_key, _ = _answer_or_drop(refused, 5)
        refused.close()
    finally:
        server.should_exit = True
        thread.join(10)
    assert answer is not None and answer.startswith(b"HTTP/1.1 431") and took < 2, (answer, took)
    assert no_key is not None and no_key.startswith(b"HTTP/1.1 401") and b"connection: close" in no_key.lower()
