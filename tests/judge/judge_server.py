"""A real OpenAI-compatible HTTP server on loopback with scripted replies, for judge tests.

The `openai` SDK really talks to it over TCP, so headers, status codes, ``Retry-After``, timeouts
and connection handling are exercised end to end. Each request takes the next scripted action
(or the default); every request is recorded with its JSON body, headers and arrival time, and the
server tracks the most requests it ever had in flight at once.

Fault actions (`fault(kind)`): ``reset`` (the connection is closed with a TCP RST, no reply),
``hang`` (the request is read and never answered until the server stops), ``html`` (a 200 whose
body is a proxy's HTML page, served as text/html), ``truncated`` (a 200 whose JSON body is cut).
"""
from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from verifier.judge.config import JudgeConfig

Action = dict[str, Any]


def ok(content: str, **extra: Any) -> Action:
    """A 200 reply with `content` (finish_reason "stop" unless overridden)."""
    return {"content": content, **extra}


def status(code: int, **extra: Any) -> Action:
    """An error status reply (e.g. 500, or 429 with headers={"Retry-After": "0.3"})."""
    return {"status": code, **extra}


def echo(body: dict) -> Action:
    """A schema-valid reply to any structured request (the echo judge's smallest instance), so
    the real pipeline runs against this server; use as ``server.default = echo``."""
    from reward.echo_judge import echo_reply

    return ok(json.dumps(echo_reply(body["response_format"]["json_schema"]["schema"])))


def fault(kind: str, **extra: Any) -> Action:
    """A fault injected on the wire (see the module docstring); `extra` as for `ok`/`status`."""
    kinds = {"reset": {"reset": True}, "hang": {"hang": True},
             "html": {"raw": "<html><body><h1>502 Bad Gateway</h1>nginx</body></html>",
                      "content_type": "text/html; charset=utf-8"},
             "truncated": {"raw": '{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"ind'}}
    return {**kinds[kind], **extra}


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    t: float


@dataclass
class ScriptedServer:
    default: Action | Callable[[dict], Action] = field(default_factory=lambda: ok("{}"))
    script: deque = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)

    def start(self) -> ScriptedServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as uvicorn (vLLM): no 40 ms delayed-ACK stall per reply

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server._serve(self, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.socket.listen(1024)  # socketserver's backlog of 5 drops SYNs of a burst (1 s retransmit)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *a: None  # broken pipes after client timeouts are expected
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self._stopping.set()  # hung handlers return
        self.httpd.shutdown()
        self.httpd.server_close()

    def push(self, *actions: Action) -> None:
        self.script.extend(actions)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests]

    def _serve(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(Recorded(handler.path, {k.lower(): v for k, v in handler.headers.items()},
                                          body, time.monotonic()))
            action = self.script.popleft() if self.script else self.default
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if callable(action):
                action = action(body)
            if self._stopping.wait(action.get("delay", 0.0)) or action.get("hang"):
                self._stopping.wait()
                handler.close_connection = True
                return
            if action.get("reset"):
                handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                handler.connection.close()  # linger 0: the peer sees a reset, not a clean close
                handler.close_connection = True
                return
            code = action.get("status", 200)
            if "raw" in action:
                payload = None
            elif code == 200:
                # A reply cut at "length" used the whole budget, as on a real server, unless the
                # script says otherwise (fewer tokens: the server clamped the budget to the context).
                full = body.get("max_completion_tokens", 5) if action.get("finish_reason") == "length" else 5
                completion = action.get("completion_tokens", full)
                payload = {
                    "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0,
                    "model": action.get("model", "served-judge"),
                    "choices": [{"index": 0, "finish_reason": action.get("finish_reason", "stop"),
                                 "message": {"role": "assistant", "content": action["content"]}}],
                    "usage": {"prompt_tokens": action.get("prompt_tokens", 10), "completion_tokens": completion,
                              "total_tokens": action.get("prompt_tokens", 10) + completion}}
            else:
                payload = {"error": {"message": f"scripted {code}", "type": "server_error", "code": code}}
            data = action["raw"].encode() if payload is None else json.dumps(payload).encode()
            handler.send_response(code)
            handler.send_header("Content-Type", action.get("content_type", "application/json"))
            handler.send_header("Content-Length", str(len(data)))
            for name, value in action.get("headers", {}).items():  # e.g. Retry-After
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with self._lock:
                self.in_flight -= 1


def fast_config(*urls: str, **overrides) -> JudgeConfig:
    """Tiny backoff and timeouts so the whole suite stays fast."""
    values = {"base_urls": list(urls), "model": "judge", "timeout_s": 5.0, "transport_retries": 2,
              "reask_retries": 2, "backoff_initial_s": 0.01, "backoff_max_s": 0.05, "backoff_jitter_s": 0.01,
              "retry_after_max_s": 2.0}
    values.update(overrides)
    return JudgeConfig(**values)
