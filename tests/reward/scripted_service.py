"""A scripted stand-in for the reward service's HTTP surface (stdlib only, any venv): each POST
pops the next scripted reply and the request is recorded, so client retry and parameter
handling can be asserted without the real service's dependencies."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

#: One OpenRLHF reply for one scored, grounded row.
SCORED = {"rewards": [0.75], "scores": [0.75], "extra_logs": {"uv_process": [0.5], "uv_outcome": [1.0],
                                                              "uv_unscored": [0.0], "uv_grounded": [1.0]}}


class ScriptedService:
    """`replies`: (status, body, headers) consumed in order; the last one repeats."""

    def __init__(self, replies: list[tuple[int, Any, dict[str, str]]]) -> None:
        self.replies, self.requests = list(replies), []  # type: list[dict[str, Any]]
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                parts = urlsplit(self.path)
                outer.requests.append({"path": parts.path, "params": dict(parse_qsl(parts.query)),
                                       "json": json.loads(body or b"null"), "headers": dict(self.headers)})
                status, reply, headers = outer.replies.pop(0) if len(outer.replies) > 1 else outer.replies[0]
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> ScriptedService:  # noqa: PYI034
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
