"""The HTTP benchmark's figures (verifier.perf): exact on hand-made cases, and on a tiny real run
cross-checked against brute-force recomputation from the judge's own request log."""
from __future__ import annotations

import asyncio
import os

from verifier.judge.config import JudgeConfig
from verifier.perf.figures import (
    OVERLAP_EPS_S,
    Figures,
    Request,
    critical_path,
    hit_rate,
    prefix_cache_counters,
    prefix_repeat_share,
    prefix_repeats,
    request_text,
    table,
)
from verifier.perf.latency_judge import LatencyJudge
from verifier.perf.run import measure
from verifier.perf.shots import source_pngs, synthetic_page, tagged_png, trajectory


def req(start: float, end: float, text: str = "", size: int = 0) -> Request:
    return Request(start=start, end=end, text=text, payload_bytes=size)


def test_critical_path_counts_sequential_waves_not_requests():
    assert critical_path([]) == 0
    # round 1: one call; round 2: three parallel calls; round 3: one call after all of them
    reqs = [req(0, 1), req(1.05, 2), req(1.06, 2.01), req(1.07, 2.02), req(2.1, 3)]
    assert critical_path(reqs) == 3
    # a concurrency limit of 2 splits the second round into two waves
    reqs = [req(0, 1), req(1.05, 2), req(1.05, 2), req(2.05, 3), req(3.05, 4)]
    assert critical_path(reqs) == 4
    assert critical_path([req(0, 1), req(0.995, 2)]) == 1  # within the jitter allowance: overlapping


def test_prefix_repeats_and_share():
    texts = ["abcX", "abcY", "zzz", "abcXq", ""]
    assert prefix_repeats(texts) == [0, 3, 0, 4, 0]
    assert prefix_repeat_share(texts) == 7 / 16
    assert prefix_repeat_share([]) == 0.0


def test_request_text_flattens_messages_with_image_placeholders():
    body = {"messages": [{"role": "system", "content": "rules"},
                         {"role": "user", "content": [{"type": "text", "text": "look"},
                                                      {"type": "image_url", "image_url": {"url": "data:x"},
                                                       "uuid": "abc"}]}]}
    text, size = request_text(body)
    assert text == "<|system|>\nrules\n<|user|>\nlook\n<image:abc>"
    assert size == len("rules") + len("look") + len("data:x")


def test_vllm_prefix_cache_counters_and_rate():
    page = ('# HELP vllm:prefix_cache_hits_total x\n'
            'vllm:prefix_cache_queries_total{engine="0",model_name="judge"} 1024.0\n'
            'vllm:prefix_cache_hits_total{engine="0",model_name="judge"} 256.0\n'
            'vllm:prefix_cache_hits_created{engine="0"} 1.7e9\n')
    assert prefix_cache_counters(page) == (256.0, 1024.0)
    assert hit_rate((256.0, 1024.0), (1280.0, 2048.0)) == 1.0
    assert hit_rate((0.0, 10.0), (0.0, 10.0)) is None


def test_figures_arithmetic():
    f = Figures(screenshots=50, calls=50, rounds=6, waves=6, wall_s=4.0, latency_s=0.5, payload_bytes=0,
                prefix_share=0.5)
    assert (f.ideal_s, f.judge_path_s, f.overhead_s, f.overhead_share) == (3.0, 3.0, 1.0, 0.25)
    assert "25%" in table([f]) and "x1.33" in table([f])
    # a wave the DAG did not need (a call queued behind its own round) is client time, not judge time
    extra = Figures(screenshots=50, calls=50, rounds=6, waves=7, wall_s=4.0, latency_s=0.5, payload_bytes=0,
                    prefix_share=0.5)
    assert (extra.judge_path_s, extra.overhead_s) == (3.0, 1.0)
    # fewer observed waves than logical rounds (a round served from a cache): only real waves count
    fewer = Figures(screenshots=5, calls=5, rounds=6, waves=4, wall_s=2.2, latency_s=0.5, payload_bytes=0,
                    prefix_share=0.0)
    assert (fewer.judge_path_s, round(fewer.overhead_s, 9)) == (2.0, 0.2)


def test_tagged_copies_are_distinct_bytes_with_the_same_pixels():
    from io import BytesIO

    from PIL import Image

    src = synthetic_page(64, 48)
    a, b = tagged_png(src, "a"), tagged_png(src, "b")
    assert len({src, a, b}) == 3
    assert Image.open(BytesIO(a)).tobytes() == Image.open(BytesIO(src)).tobytes()
    traj = trajectory(8, [src], run="t")
    assert len(traj.distinct_screenshots()) == 6  # every fourth repeats the previous one


def brute_force_waves(reqs: list[Request], eps: float = OVERLAP_EPS_S) -> int:
    depth: dict[int, int] = {}
    for i in sorted(range(len(reqs)), key=lambda i: reqs[i].end):
        depth[i] = 1 + max((depth[j] for j in depth if reqs[j].end <= reqs[i].start - eps), default=0)
    return max(depth.values(), default=0)


def brute_force_share(texts: list[str]) -> float:
    repeated = sum(max((len(os.path.commonprefix([t, u])) for u in texts[:i]), default=0)
                   for i, t in enumerate(texts))
    return repeated / sum(map(len, texts))


def test_tiny_run_figures_match_the_judge_log():
    server = LatencyJudge(latency_s=0.05).start()
    try:
        traj = trajectory(3, source_pngs(), run="test")
        cfg = JudgeConfig(base_urls=[server.url], model="judge", timeout_s=30)
        fig = asyncio.run(measure([traj], cfg, latency_s=0.05, requests=lambda: list(server.log)))
    finally:
        server.stop()
    log = server.log
    assert fig.calls == len(log) == server.requests
    assert fig.waves == brute_force_waves(log) >= fig.rounds  # a dependent call starts after its parent
    assert fig.payload_bytes == sum(r.payload_bytes for r in log) > 0
    texts = [r.text for r in sorted(log, key=lambda r: r.start)]
    assert abs(fig.prefix_share - brute_force_share([r.text for r in log])) < 1e-9
    assert sum(t.count("<image:") for t in texts) >= 2  # the screenshots were sent
    assert fig.overhead_s == max(0.0, fig.wall_s - min(fig.waves, fig.rounds) * 0.05)


def test_the_judge_clock_starts_when_the_headers_arrive_not_after_the_body():
    """Reading and parsing a body of screenshots is the judge's work, not client overhead."""
    import json as _json
    import socket
    import time

    server = LatencyJudge(latency_s=0.0).start()
    try:
        body = _json.dumps({"model": "judge", "messages": [{"role": "user", "content": "x"}],
                            "response_format": {"type": "json_schema", "json_schema": {
                                "schema": {"type": "object", "properties": {}, "required": []}}}}).encode()
        head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        with socket.create_connection(server.httpd.server_address[:2], timeout=10) as sock:
            sent_head = time.monotonic()
            sock.sendall(head)
            time.sleep(0.3)  # the body arrives late (a slow upload)
            sock.sendall(body)
            assert b" 200 " in sock.recv(65536).split(b"\r\n", 1)[0] + b" "
    finally:
        server.stop()
    (req,) = server.log
    assert sent_head <= req.start < sent_head + 0.2 and req.end >= sent_head + 0.3


def _body_with(urls: list[str], text: str = "look") -> dict:
    parts = [{"type": "text", "text": text}] + [{"type": "image_url", "image_url": {"url": u}} for u in urls]
    return {"model": "judge", "messages": [{"role": "user", "content": parts}]}


def test_the_latency_judge_elides_base64_images_before_parsing():
    import base64
    import json as _json

    from verifier.perf.latency_judge import elide_data_urls

    a = "data:image/png;base64," + base64.b64encode(b"\x89PNG first" * 500).decode()
    b = "data:image/jpeg;base64," + base64.b64encode(b"\xff\xd8 second" * 300).decode()
    svg = "data:image/svg+xml,<svg/>"  # not base64: kept
    quoted = 'the page said "data:image/png;base64,AAAA" in its text'  # inside a string: kept
    body = _body_with([a, b, a, svg], text=quoted)
    raw = _json.dumps(body, separators=(",", ":")).encode()
    small, elided = elide_data_urls(raw)
    got = _json.loads(small)
    urls = [p["image_url"]["url"] for p in got["messages"][0]["content"][1:]]
    assert got["messages"][0]["content"][0]["text"] == quoted and urls[3] == svg
    assert urls[0] == urls[2] != urls[1] and all(u.startswith("data:image/elided;sha1=") for u in urls[:3])
    assert len(raw) - len(small) == elided > 2 * len(a)  # what was removed is counted
    assert elide_data_urls(b'{"a":"\\"data:image/png;base64,AAA\\""}') == (b'{"a":"\\"data:image/png;base64,AAA\\""}', 0)


def test_the_latency_judge_logs_what_was_sent_with_images_elided():
    """The same text (placeholders included) and payload bytes as `request_text` on the body the
    client built."""
    import base64
    import json as _json
    import urllib.request

    a = "data:image/png;base64," + base64.b64encode(b"one" * 4000).decode()
    b = "data:image/png;base64," + base64.b64encode(b"two" * 4000).decode()
    body = _body_with([a, b, a])
    body["response_format"] = {"type": "json_schema", "json_schema": {
        "schema": {"type": "object", "properties": {}, "required": []}}}
    server = LatencyJudge(latency_s=0.0).start()
    try:
        req = urllib.request.Request(server.url + "/chat/completions", data=_json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 200
    finally:
        server.stop()
    (logged,) = server.log
    assert (logged.text, logged.payload_bytes) == request_text(body)  # as if it had parsed them
    marks = [w for w in logged.text.split() if w.startswith("<image:")]
    assert len(marks) == 3 and marks[0] == marks[2] != marks[1]


def test_the_benchmark_finds_real_captures_by_the_suites_variable_and_says_when_it_has_none(
        monkeypatch, tmp_path):
    from verifier.perf import shots

    folder = tmp_path / "data" / shots.SHOTS_SUBDIR
    folder.mkdir(parents=True)
    real = [synthetic_page(seed=7), synthetic_page(seed=8)]  # any PNGs other than the fallback's
    for k, png_bytes in enumerate(real):
        (folder / f"screenshot_{k}.png").write_bytes(png_bytes)
    monkeypatch.setenv("CUA_SHARED_DATA", str(tmp_path / "data"))
    assert shots.shared_shots() == folder and source_pngs() == real
    assert shots.describe(real).startswith("2 source real screenshots")
    monkeypatch.setenv("CUA_SHARED_DATA", str(tmp_path / "nowhere"))
    fallback = source_pngs()
    assert fallback == [synthetic_page(seed=k) for k in range(3)]
    assert "SYNTHETIC" in shots.describe(fallback)
