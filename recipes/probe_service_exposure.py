"""What an unauthenticated or slow client can make the reward service hold (issue 38 §1, §2, §8).

Starts `serve-reward` on 127.0.0.1 (API key set, loopback judge) and runs one probe:

    python recipes/probe_service_exposure.py paths --n 20000     # metric series and /metrics size
    python recipes/probe_service_exposure.py heads --n 20 --mb 16  # RSS under unfinished huge headers
    python recipes/probe_service_exposure.py uploads --n 6 --mb 64 # a small request behind slow uploads
    python recipes/probe_service_exposure.py pixels --n 16 --side 6300 # RSS under near-limit screenshots

`paths`: N random paths, half without the key (401), half with it (404), then the series count,
/metrics size and scrape time, and the service's RSS. `heads`: N connections each sending a header
of MB megabytes without ever finishing it; peak RSS and when each connection was answered or
dropped (90 s at most). `uploads`: N uploads announcing MB megabytes each and sending a byte every
5 s, then one small verification: its status, how long it took, and the bytes held in flight.
`pixels` (issue 38 §3): N verifications sent at once, each with one SIDE x SIDE RGBA screenshot (a
near-limit image: ~170 kB as PNG, ~160 MB decoded at 6300 px); their statuses and the service's RSS
before and at its peak (VmHWM).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import socket
import string
import subprocess
import sys
import threading
import time

import httpx
import psutil

from serving.perf.loadtest import LoopbackJudge, trajectory

KEY_ENV, KEY = "PROBE_REWARD_KEY", "probe-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


def start(judge_url: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", "from cua_verifier.cli import main; raise SystemExit(main())",
                             "serve-reward", "--port", "0", "--judge-url", judge_url, "--model", "echo",
                             "--api-key-env", KEY_ENV], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, KEY_ENV: KEY})
    line = proc.stdout.readline()  # type: ignore[union-attr]
    return proc, line.split(" at ", 1)[1].split()[0]


def paths(url: str, proc: psutil.Process, n: int) -> dict:
    rss0 = proc.memory_info().rss
    with httpx.Client(base_url=url, timeout=30) as c:
        for k in range(n):
            c.get("/" + "".join(random.choices(string.ascii_letters, k=12)), headers=AUTH if k % 2 else {})
        t0 = time.perf_counter()
        text = c.get("/metrics", headers=AUTH).text
        scrape = time.perf_counter() - t0
    return {"paths": n, "series": sum(1 for line in text.splitlines() if line and not line.startswith("#")),
            "metrics_bytes": len(text), "scrape_s": round(scrape, 2),
            "rss_mb": [rss0 >> 20, proc.memory_info().rss >> 20]}


def heads(url: str, proc: psutil.Process, n: int, mb: float) -> dict:
    host, port = url.removeprefix("http://").split(":")
    rss0 = peak = proc.memory_info().rss
    socks = [socket.create_connection((host, int(port))) for _ in range(n)]

    def flood(s: socket.socket) -> None:
        try:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\nX-Big: ")
            for _ in range(int(mb * 16)):
                s.sendall(b"a" * 65536)
        except OSError:
            pass

    start_t = time.monotonic()
    for s in socks:
        threading.Thread(target=flood, args=(s,), daemon=True).start()
    ended: dict[int, tuple[float, str]] = {}
    while len(ended) < n and time.monotonic() - start_t < 90:
        peak = max(peak, proc.memory_info().rss)
        for k, s in enumerate(socks):
            if k in ended:
                continue
            s.setblocking(False)
            try:
                ended[k] = (time.monotonic() - start_t, s.recv(40).split(b"\r\n")[0].decode() or "closed")
            except BlockingIOError:
                pass
            except OSError as exc:
                ended[k] = (time.monotonic() - start_t, type(exc).__name__)
        time.sleep(0.1)
    times = sorted(t for t, _ in ended.values())
    return {"connections": n, "header_mb": mb, "rss_mb": {"before": rss0 >> 20, "peak": peak >> 20},
            "dropped": len(ended), "last_dropped_s": round(times[-1], 2) if times else None,
            "answers": sorted({a for _, a in ended.values()})}


def uploads(url: str, n: int, mb: float) -> dict:
    host, port = url.removeprefix("http://").split(":")
    socks = []
    for _ in range(n):
        s = socket.create_connection((host, int(port)))
        s.sendall(b"POST /v1/verify HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + KEY.encode()
                  + b"\r\nContent-Length: " + str(int(mb * 2**20)).encode() + b"\r\n\r\n{")
        socks.append(s)
    stop = threading.Event()

    def drip() -> None:
        while not stop.wait(5):
            for s in socks:
                try:
                    s.sendall(b" ")
                except OSError:
                    pass

    threading.Thread(target=drip, daemon=True).start()
    time.sleep(1)
    t0 = time.monotonic()
    r = httpx.post(url + "/v1/verify", json={"trajectory": trajectory(1).model_dump(mode="json")},
                   headers=AUTH, timeout=120)
    took = time.monotonic() - t0
    held = httpx.get(url + "/health").json()["bytes_in_flight"]
    stop.set()
    return {"uploads": n, "announced_mb": mb, "small_request": r.status_code, "took_s": round(took, 2),
            "bytes_in_flight": held}


def pixels(url: str, proc: psutil.Process, n: int, side: int) -> dict:
    import asyncio
    import io

    from PIL import Image, ImageDraw

    bodies = []
    for k in range(n):
        img = Image.new("RGBA", (side, side), (255, 255, 255, 255))
        ImageDraw.Draw(img).rectangle([k * 100, k * 100, k * 100 + 500, k * 100 + 300], fill=(200, 30, 30, 255))
        buf = io.BytesIO()
        img.save(buf, format="PNG", compress_level=6)
        bodies.append(json.dumps({"trajectory": trajectory(k, shot=buf.getvalue()).model_dump(mode="json")}))
    del img
    rss0 = proc.memory_info().rss

    async def send() -> list[int]:
        async with httpx.AsyncClient(timeout=600, headers=AUTH) as c:
            got = await asyncio.gather(*(c.post(url + "/v1/verify", content=b) for b in bodies))
        return [r.status_code for r in got]

    t0 = time.monotonic()
    codes = asyncio.run(send())
    with open(f"/proc/{proc.pid}/status", encoding="ascii") as fh:
        peak_kb = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    return {"requests": n, "side": side, "body_mb": round(sum(map(len, bodies)) / 2**20, 1), "statuses": codes,
            "took_s": round(time.monotonic() - t0, 1), "rss_mb": [rss0 >> 20, proc.memory_info().rss >> 20],
            "peak_rss_mb": peak_kb >> 10}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("probe", choices=["paths", "heads", "uploads", "pixels"])
    p.add_argument("--n", type=int, default=None)
    p.add_argument("--mb", type=float, default=None)
    p.add_argument("--side", type=int, default=6300, help="pixels: the screenshots' side")
    a = p.parse_args()
    with LoopbackJudge() as judge:
        proc, url = start(judge.url)
        try:
            watched = psutil.Process(proc.pid)
            if a.probe == "paths":
                out = paths(url, watched, a.n or 20000)
            elif a.probe == "heads":
                out = heads(url, watched, a.n or 20, a.mb or 16)
            elif a.probe == "uploads":
                out = uploads(url, a.n or 6, a.mb or 64)
            else:
                out = pixels(url, watched, a.n or 16, a.side)
        finally:
            proc.terminate()
            proc.wait(60)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
