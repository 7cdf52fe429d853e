"""A judge reply has a byte cap, and a re-ask echoes at most a bounded part of it (issue 38 §4).

A judge (or a proxy before it) answering 200 with hundreds of megabytes made the client read the
body whole and send it back as the assistant turn of the re-ask: a 2.1 GB peak for one rollout.
The cap is a multiple of the call's reply budget; past it the read stops (a typed, retried
`JudgeMalformedResponseError`), whether the body declares its length or is chunked.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from judge_server import fast_config, ok
from pydantic import BaseModel, Field

from verifier.judge import Message, make_judge
from verifier.judge.http import REPLY_BYTES_PER_TOKEN, REPLY_ENVELOPE_BYTES, reply_byte_cap

#: A subprocess (its own peak RSS): a loopback server streams `SIZE` bytes lazily, 1 MB at a time,
#: with or without Content-Length; the real judge client asks it once and reports what happened.
SCRIPT = textwrap.dedent('''
    import asyncio, json, resource, sys, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from pydantic import BaseModel
    from verifier.errors import JudgeError
    from verifier.judge import JudgeConfig, Message, make_judge

    SIZE, CHUNKED = int(sys.argv[1]), sys.argv[2] == "chunked"
    sent = [0]

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *a): pass
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding" if CHUNKED else "Content-Length", "chunked" if CHUNKED else str(SIZE))
            self.end_headers()
            piece = b" " * 2**20
            try:
                for _ in range(SIZE // len(piece)):
                    if CHUNKED:
                        self.wfile.write(b"%x\\r\\n" % len(piece) + piece + b"\\r\\n")
                    else:
                        self.wfile.write(piece)
                    sent[0] += len(piece)
            except OSError:
                pass
            self.close_connection = True

    class A(BaseModel):
        ok: bool

    async def ask(url):
        judge = make_judge(JudgeConfig(base_urls=[url], model="judge", timeout_s=60, transport_retries=1,
                                       reask_retries=1, backoff_initial_s=0.01, backoff_max_s=0.02,
                                       backoff_jitter_s=0.0))
        try:
            await judge.complete([Message.user("Is it done?")], A, stage="outcome")
            return "answered"
        except JudgeError as exc:
            return f"{type(exc).__name__}: {exc}"
        finally:
            await judge.aclose()

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    outcome = asyncio.run(ask(f"http://127.0.0.1:{httpd.server_address[1]}/v1"))
    httpd.shutdown()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"outcome": outcome, "grew_mb": (peak - base) / 1024, "sent_mb": sent[0] / 2**20}))
''')

SIZE = 400 * 2**20


def run(mode: str) -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(SIZE), mode], check=False, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_400_mb_reply_with_its_length_declared_is_refused_before_it_is_read():
    got = run("length")
    assert got["outcome"].startswith("JudgeMalformedResponseError") and "reply cap" in got["outcome"], got
    assert got["grew_mb"] < 64, got  # bound: far below the 400 MB body (before the cap: > 800 MB)


def test_a_400_mb_chunked_reply_stops_being_read_at_the_cap():
    got = run("chunked")
    assert got["outcome"].startswith("JudgeMalformedResponseError") and "reply cap" in got["outcome"], got
    assert got["grew_mb"] < 64, got
    assert got["sent_mb"] < 200, got  # the client closed the connection; the server did not send it all


def test_the_cap_is_a_multiple_of_the_reply_budget():
    assert reply_byte_cap(4096) == REPLY_ENVELOPE_BYTES + REPLY_BYTES_PER_TOKEN * 4096
    assert reply_byte_cap(None) == reply_byte_cap(10) == reply_byte_cap(1024)  # a floor for tiny budgets
    assert reply_byte_cap(8192) > reply_byte_cap(4096)


class Score(BaseModel):
    score: int = Field(ge=0, le=10)


async def test_a_re_ask_echoes_a_runaway_reply_cut_to_the_budget(server):
    runaway = "{" + "x" * 60_000  # invalid JSON, under the byte cap
    server.push(ok(runaway), ok(json.dumps({"score": 3})))
    judge = make_judge(fast_config(server.url))
    try:
        reply = await judge.complete([Message.user("Grade it.")], Score, stage="rubric")
    finally:
        await judge.aclose()
    assert reply.parsed.score == 3
    first, second = server.bodies
    echoed = second["messages"][-2]
    assert echoed["role"] == "assistant" and echoed["content"].startswith("{xxx")
    budget = first["max_completion_tokens"]
    assert len(echoed["content"]) <= 4 * max(budget, 256) + 80 < len(runaway)
    assert "more characters of this reply cut" in echoed["content"]
