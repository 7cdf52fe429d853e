"""A schema-echo judge: an OpenAI-compatible HTTP server that answers every structured request
with a minimal instance of the JSON schema it was sent.

Why: the GRPO recipe and reward plumbing should be smoke-testable *over HTTP* (the real judge
client, retries, image encoding, the real pipeline) on a CPU box with no model at all. Because the
verifier's per-call schemas are self-contained and bounded (criterion ids and screenshot numbers
are enums, list lengths are fixed), "the smallest valid instance" is a complete, schema-valid
reply for every stage. Verdicts are meaningless; use a served model (serving/) for real scores.

    python -m reward.echo_judge --port 8011          # then: CUA_JUDGE_URL=http://127.0.0.1:8011/v1
"""
from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FILLER = "scripted"


def minimal_instance(schema: dict[str, Any], index: int = 0) -> Any:
    """The smallest valid value of a self-contained JSON schema; `index` walks enums in arrays,
    so a list of N items with an N-value enum field names each value once."""
    for key in ("anyOf", "oneOf"):
        if key in schema:
            if any(option.get("type") == "null" for option in schema[key]):
                return None  # optional: the simplest valid answer
            return minimal_instance(schema[key][0], index)
    if "enum" in schema:
        return schema["enum"][index % len(schema["enum"])]
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


class EchoJudgeServer:
    """Threaded loopback server; `.url` is the base URL, `.requests` counts chat completions."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.requests = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                status, payload = server.answer(self.path, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if not path.rstrip("/").endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {path}", "type": "not_found"}}
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema")
        if schema is None:
            return 400, {"error": {"message": "echo judge needs response_format json_schema",
                                   "type": "invalid_request_error"}}
        with self._lock:
            self.requests += 1
            n = self.requests
        content = json.dumps(minimal_instance(schema))
        return 200, {"id": f"chatcmpl-echo-{n}", "object": "chat.completion", "created": 0,
                     "model": body.get("model", "echo-judge"),
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": content}}],
                     "usage": {"prompt_tokens": 100, "completion_tokens": len(content) // 4,
                               "total_tokens": 100 + len(content) // 4}}

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> EchoJudgeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> EchoJudgeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8011)
    args = p.parse_args(argv)
    server = EchoJudgeServer(args.host, args.port)
    print(f"echo judge at {server.url} (Ctrl-C to stop)", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
