"""`bench` through the real OpenAI-compatible judge client against a loopback HTTP server.

Checks what the scripted judge cannot: the baselines' output models survive the judge's JSON-schema
path (response_format), screenshots are sent as images, and usage flows into the report.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cua_verifier.cli import main

BB = "fara7b_om2w_browserbase"


def _answer(props: dict) -> dict:
    if "verdict" in props:
        return {"reasoning": "the final page shows the result", "verdict": "SUCCESS"}
    if "key_points" in props:
        return {"key_points": ["do the thing"]}
    if "score" in props:
        return {"description": "a page", "reasoning": "relevant", "score": 4}
    if "status" in props:
        return {"thoughts": "the key point is not met", "status": "failure"}
    raise AssertionError(f"unexpected schema {sorted(props)}")


@pytest.fixture
def judge_server():
    bodies: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            rf = body.get("response_format") or {}
            schema = rf.get("json_schema", {}).get("schema", {})
            content = json.dumps(_answer(schema.get("properties", {})))
            reply = {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": content}}],
                     "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", bodies
    srv.shutdown()
    srv.server_close()


def test_bench_baselines_over_http(bench_dir, tmp_path, judge_server, capsys):
    url, bodies = judge_server
    out = tmp_path / "run"
    rc = main(["bench", "--split", BB, "--data-dir", str(bench_dir), "--judge-url", url, "--model", "judge-m",
               "--verifiers", "webvoyager,webjudge", "--out", str(out), "--no-progress", "--n-boot", "50"])
    assert rc == 0
    recs = [json.loads(x) for x in (out / "results_webvoyager.jsonl").read_text().splitlines()]
    assert [r["status"] for r in recs] == ["scored"] * 3
    assert all(r["result"]["outcome_success"] is True and r["result"]["models"] == ["judge-m"] for r in recs)
    voyager = [b for b in bodies if "verdict" in json.dumps(b.get("response_format", {}))]
    assert len(voyager) == 3
    images = [p for m in voyager[0]["messages"] for p in (m["content"] if isinstance(m["content"], list) else [])
              if p.get("type") == "image_url"]
    assert images and images[0]["image_url"]["url"].startswith("data:image/")
    wj = [json.loads(x) for x in (out / "results_webjudge.jsonl").read_text().splitlines()]
    assert all(r["status"] == "scored" and r["result"]["outcome_success"] is False for r in wj)
    assert wj[0]["result"]["usage"]["prompt_tokens"] == 50 * wj[0]["result"]["usage"]["calls"]
    md = (out / "report.md").read_text()
    assert "| webvoyager | outcome | final adjudicated (UV-informed) | 3 | 0 | 1 | 2 | 0 | 0 |" in md
