"""A loopback judge with a fixed latency that records what it was sent, for the HTTP benchmark.

It is the schema-echo judge (`verifier.testing.echo_judge`: every structured request gets a minimal valid
instance of its schema) plus a sleep of ``latency_s`` per request and a log of each request's
arrival and reply time and flattened text. It runs in its *own process* (``python -m
verifier.perf.latency_judge``), so its JSON parsing and threads do not share the client's GIL: the
client's measured overhead is the client's own.

Two extra routes, loopback only like the rest: ``POST /bench/log`` returns the log and
``POST /bench/reset`` clears it.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import time
from typing import Any

from ..testing.echo_judge import EchoJudgeServer, serve_until_interrupted
from .figures import ELIDED_URL, Request, request_text

#: Request bodies up to this size are read (a relevance batch of full-size screenshots is large).
BENCH_MAX_BODY = 512 * 1024 * 1024
LISTEN_BACKLOG = 1024


_DATA_URL = b'"data:image/'
_ELIDED = ELIDED_URL.encode()


def elide_data_urls(raw: bytes) -> tuple[bytes, int]:
    """`raw` JSON with each ``"data:image/...;base64,..."`` string replaced by a short stand-in
    naming the URL's sha1 (`figures.image_placeholder` gives it the URL's own placeholder), and
    the number of bytes removed. Only whole strings that cannot hold an escape are replaced; the
    scan is ``bytes.find`` (C speed), the hash releases the GIL."""
    out: list[bytes] = []
    pos = elided = 0
    while (start := raw.find(_DATA_URL, pos)) >= 0:
        end = raw.find(b'"', start + 1)
        if end < 0:
            break
        url = raw[start + 1:end]
        if (start and raw[start - 1] == 0x5C) or b"\\" in url or b";base64," not in url[:64]:
            out.append(raw[pos:end])  # inside another string, or not a plain base64 URL: keep it
            pos = end
            continue
        stand_in = _ELIDED + hashlib.sha1(url).hexdigest().encode()
        out += [raw[pos:start + 1], stand_in]
        elided += len(url) - len(stand_in)
        pos = end
    out.append(raw[pos:])
    return b"".join(out), elided


class LatencyJudge(EchoJudgeServer):
    """`EchoJudgeServer` answering each chat completion after `latency_s`, logging every request."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, latency_s: float = 0.5,
                 api_key: str | None = None) -> None:
        super().__init__(host, port, api_key=api_key, max_body_bytes=BENCH_MAX_BODY)
        # socketserver listens with a backlog of 5: a burst of 40 relevance calls would overflow
        # it, and a dropped SYN is retransmitted only after 1 s (a fake extra wave).
        self.httpd.socket.listen(LISTEN_BACKLOG)
        self.latency_s = latency_s
        self.log: list[Request] = []
        self._log_lock = threading.Lock()
        # The clock of a request starts when its headers have arrived: reading and parsing a body
        # of several MB of screenshots is the judge's own work (vLLM's too, inside its latency),
        # not client overhead. One thread per connection, one request at a time: a thread-local.
        arrival = self._arrival = threading.local()

        class Stamped(self.httpd.RequestHandlerClass):  # type: ignore[name-defined,misc]
            def parse_request(self) -> bool:
                arrival.t = time.monotonic()
                return super().parse_request()

        self.httpd.RequestHandlerClass = Stamped

    def decode(self, raw: bytes) -> Any:
        """JSON with each base64 image elided before parsing (`elide_data_urls`): parsing a 2 MB body
        costs this judge ~7 ms of its GIL, and a fan-out of 75 such requests queued every later
        request's headers behind the earlier bodies (~0.3 s at M = 100), a delay of the instrument
        that the benchmark would have charged to the client. The bytes elided still count as sent."""
        small, elided = elide_data_urls(raw)
        try:
            body = json.loads(small)
        except ValueError:  # an elision that broke the JSON: parse what was sent
            body, elided = json.loads(raw), 0
        self._arrival.elided = elided
        return body

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if path.rstrip("/").endswith("/bench/log"):
            with self._log_lock:
                return 200, {"requests": [r.__dict__ for r in self.log]}
        if path.rstrip("/").endswith("/bench/reset"):
            with self._log_lock:
                self.log.clear()
            return 200, {"ok": True}
        start = getattr(self._arrival, "t", None) or time.monotonic()
        text, size = request_text(body)
        size += getattr(self._arrival, "elided", 0)
        self._arrival.elided = 0
        time.sleep(max(0.0, self.latency_s - (time.monotonic() - start)))
        status, reply = super().answer(path, body)
        with self._log_lock:
            self.log.append(Request(start=start, end=time.monotonic(), text=text, payload_bytes=size))
        return status, reply


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--latency", type=float, default=0.5, help="seconds per chat completion")
    args = p.parse_args(argv)
    server = LatencyJudge("127.0.0.1", args.port, latency_s=args.latency)
    print(json.dumps({"url": server.url}), flush=True)  # the parent reads this line
    return serve_until_interrupted(server.httpd)


if __name__ == "__main__":
    sys.exit(main())
