"""A schema-echo judge: an OpenAI-compatible HTTP server that answers every structured request
with a minimal instance of the JSON schema it was sent.

Why: the GRPO recipe and reward plumbing should be smoke-testable *over HTTP* (the real judge
client, retries, image encoding, the real pipeline) on a CPU box with no model at all. Because the
verifier's per-call schemas are self-contained and bounded (criterion ids and screenshot numbers
are enums, list lengths are fixed), "the smallest valid instance" is a complete, schema-valid
reply for every stage. Verdicts are meaningless; use a served model (serving/) for real scores.

    python -m reward.echo_judge --port 8011          # then: CUA_JUDGE_URL=http://127.0.0.1:8011/v1

It sits in `verifier.testing`, below both the rewards (`reward.echo_judge` re-exports it) and the
HTTP benchmark's latency judge (`verifier.perf.latency_judge` subclasses it).

It is a test tool, not a service: it binds to loopback only (a non-loopback host is refused),
rejects request bodies over `MAX_BODY_BYTES` with 413 before reading them, gives up on a client
that stalls for `READ_TIMEOUT_S` while sending its request (headers or body: 408 and the connection
closed, so a stalled upload cannot hold a thread forever), and, when it has a key
(``api_key=`` or, from the command line, ``$CUA_JUDGE_API_KEY`` when set), answers 401 to any
request without ``Authorization: Bearer <key>``.
"""
from __future__ import annotations

import argparse
import hmac
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..network import is_loopback

if TYPE_CHECKING:
    from typing import Self

FILLER = "scripted"
MAX_BODY_BYTES = 8 * 1024 * 1024  # a few screenshots at the judge's image size fit comfortably
READ_TIMEOUT_S = 30.0  # longest silence while a client sends its request


def minimal_instance(schema: dict[str, Any], index: int = 0) -> Any:
    """The smallest valid value of a self-contained JSON schema; `index` walks enums in arrays,
    so a list of N items with an N-value enum field names each value once."""
    for key in ("anyOf", "oneOf"):
        if key in schema:
            if any(option.get("type") == "null" for option in schema[key]):
                return None  # optional: the simplest valid answer
            return minimal_instance(schema[key][0], index)
    if "enum" in schema:
        values = schema["enum"]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            # a stepped number sent as its allowed values (half points): the value the plain
            # number rule below picks, so the echo judge's verdicts do not depend on the encoding
            return min(values, key=lambda v: abs(v - 0.5))
        return values[index % len(values)]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind == "object":
        return {k: minimal_instance(v, index) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        n = 0 if schema.get("maxItems", 1) == 0 else max(schema.get("minItems", 1), 1)
        return [minimal_instance(schema.get("items", {}), i) for i in range(n)]
    if kind == "string":
        size = max(schema.get("minLength", 1), min(schema.get("maxLength", 16), 16))
        return (FILLER * (size // len(FILLER) + 1))[:size]
    if kind in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        hi = schema.get("maximum", lo + 10)
        return max(lo, min(hi, 5 if kind == "integer" else 0.5))
    if kind == "boolean":
        return True
    return None


def echo_reply(schema: dict[str, Any]) -> Any:
    """The echo judge's reply: the smallest valid instance, with every evidence tag "consistent".

    Why not the enum's first value there: it is "contradiction", which with the smallest points
    lets code veto the outcome (veto V6, verifier/vetoes.py) only when the rescoring call answered,
    so a stand-in used to test outages would change its verdict with the stages that failed. With
    a neutral tag its verdict is one fixed value, whichever stages answered."""
    return _neutral(minimal_instance(schema))


def _neutral(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("consistent" if k == "evidence_tag" else _neutral(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_neutral(v) for v in value]
    return value


class EchoJudgeServer:
    """Threaded loopback server; `.url` is the base URL, `.requests` counts chat completions.

    Raises ConfigError for a non-loopback `host`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, api_key: str | None = None,
                 max_body_bytes: int = MAX_BODY_BYTES, read_timeout_s: float = READ_TIMEOUT_S) -> None:
        if not is_loopback(host):
            raise ConfigError(f"the echo judge serves on loopback only (got host {host!r})")
        self.requests = 0
        self.api_key = api_key or None
        self.max_body_bytes = max_body_bytes
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: with Nagle on, the body waits for the
            # client's delayed ACK (40 ms on Linux) on every reused connection. Real servers
            # (uvicorn under vLLM) set TCP_NODELAY too.
            disable_nagle_algorithm = True
            timeout = read_timeout_s  # socket timeout: a stalled header line ends the connection

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                status, payload = self._checked()
                if status == 200:
                    status, payload = server.answer(self.path, payload)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if self.close_connection:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)

            def _checked(self) -> tuple[int, dict[str, Any]]:
                """(200, body) for an authorised, bounded JSON request, else (status, error)."""
                if server.api_key is not None:
                    given = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
                    if not hmac.compare_digest(given.encode(), server.api_key.encode()):
                        self.close_connection = True  # the body was not read
                        return 401, _error("invalid or missing API key", "authentication_error")
                try:
                    length = int(self.headers.get("Content-Length", ""))
                except ValueError:
                    self.close_connection = True
                    return 411, _error("Content-Length required", "invalid_request_error")
                if length < 0 or length > server.max_body_bytes:
                    self.close_connection = True
                    return 413, _error(f"request body over {server.max_body_bytes} bytes",
                                       "invalid_request_error")
                try:
                    raw = self.rfile.read(length)
                except TimeoutError:  # a stalled upload: answer and hang up
                    self.close_connection = True
                    return 408, _error(f"request body not received within {read_timeout_s}s",
                                       "invalid_request_error")
                try:
                    body = server.decode(raw or b"{}")
                except ValueError:
                    return 400, _error("request body is not JSON", "invalid_request_error")
                if not isinstance(body, dict):
                    return 400, _error("request body is not a JSON object", "invalid_request_error")
                return 200, body

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        # A short poll: shutdown() waits up to one poll interval (the 0.5 s default cost every
        # test that stops a judge half a second).
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def decode(self, raw: bytes) -> Any:
        """The request body as JSON (raises ValueError: a 400). Subclasses may read it cheaper."""
        return json.loads(raw)

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if not path.rstrip("/").endswith("/chat/completions"):
            return 404, _error(f"no route {path}", "not_found")
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema") if isinstance(fmt, dict) else None
        if not isinstance(schema, dict):
            return 400, _error("echo judge needs response_format json_schema", "invalid_request_error")
        with self._lock:
            self.requests += 1
            n = self.requests
        content = json.dumps(self.reply_for(schema, body))
        return 200, {"id": f"chatcmpl-echo-{n}", "object": "chat.completion", "created": 0,
                     "model": body.get("model", "echo-judge"),
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": content}}],
                     "usage": {"prompt_tokens": 100, "completion_tokens": len(content) // 4,
                               "total_tokens": 100 + len(content) // 4}}

    def reply_for(self, schema: dict[str, Any], body: dict[str, Any]) -> Any:
        """The reply to one structured request (subclasses answer otherwise: the lenient judge)."""
        return echo_reply(schema)

    @property
    def url(self) -> str:
        host = self.httpd.server_address[0]
        host = host.decode() if isinstance(host, bytes) else host
        return f"http://{host}:{self.httpd.server_port}/v1"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1", help="a loopback address (others are refused)")
    p.add_argument("--port", type=int, default=8011)
    p.add_argument("--api-key-env", default="CUA_JUDGE_API_KEY",
                   help="require the key in this variable when it is set (default CUA_JUDGE_API_KEY)")
    args = p.parse_args(argv)
    try:
        server = EchoJudgeServer(args.host, args.port, api_key=os.environ.get(args.api_key_env))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    auth = f"requires ${args.api_key_env}" if server.api_key else "no API key"
    print(f"echo judge at {server.url} ({auth}; Ctrl-C to stop)", flush=True)
    return serve_until_interrupted(server.httpd)


def serve_until_interrupted(httpd: Any) -> int:
    """Serve in this thread until Ctrl-C (the command-line servers' main loop); returns exit code 0."""
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
