"""Rewards over real HTTP: the real judge client + pipeline against the schema-echo judge server."""
from __future__ import annotations

import asyncio
import http.client
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from PIL import Image

from reward import clear_sessions, make_uv_rewards
from reward.echo_judge import EchoJudgeServer, echo_reply, main, minimal_instance
from verifier.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def echo():
    clear_sessions()
    with EchoJudgeServer() as server:
        yield server
    clear_sessions()


def test_the_echo_reply_tags_every_claim_consistent():
    """The smallest rescoring reply tags its criterion "contradiction" (the enum's first value) at
    0.5 points, which code vetoes (V6) only when rescoring answered; the echo judge's verdict must not
    depend on which stages answered, so its reply tags every claim "consistent"."""
    from verifier.judge.schema import json_schema_for
    from verifier.narrowing import for_call
    from verifier.schemas import Rescoring

    schema = json_schema_for(for_call(Rescoring, ("c1", "c2")))
    assert [i["evidence_tag"] for i in minimal_instance(schema)["items"]] == ["contradiction", "fabrication"]
    reply = echo_reply(schema)
    assert [i["evidence_tag"] for i in reply["items"]] == ["consistent", "consistent"]
    assert [i["earned"] for i in reply["items"]] == [i["earned"] for i in minimal_instance(schema)["items"]]


def test_minimal_instance_walks_enums_and_respects_bounds():
    schema = {"type": "object", "properties": {
        "items": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "object", "properties": {
            "criterion_id": {"enum": ["C1", "C2"]}, "earned": {"type": "integer", "minimum": 0, "maximum": 3},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "why": {"type": "string", "minLength": 20, "maxLength": 40}}}}}}
    out = minimal_instance(schema)
    assert [i["criterion_id"] for i in out["items"]] == ["C1", "C2"]
    assert out["items"][0]["earned"] == 3 and out["items"][0]["note"] is None
    assert len(out["items"][0]["why"]) == 20


def test_a_stepped_number_sent_as_an_enum_gets_the_plain_number_rules_value():
    """Half points go to vLLM as an enum of allowed values; the echo reply is the same as for the
    plain `number` (0.5), so the echo judge's verdicts do not change with the schema's encoding."""
    stepped = {"enum": [0.0, 0.5, 1.0, 1.5, 2.0]}
    assert minimal_instance(stepped) == 0.5 == minimal_instance({"type": "number", "minimum": 0, "maximum": 2})
    assert [minimal_instance({"enum": ["a", "b"]}, i) for i in range(3)] == ["a", "b", "a"]


def _post(server: EchoJudgeServer, body: bytes, headers: dict[str, str] | None = None,
          length: int | None = None) -> tuple[int, dict]:
    host, port = server.httpd.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=10)
    conn.putrequest("POST", "/v1/chat/completions")
    conn.putheader("Content-Length", str(len(body) if length is None else length))
    for k, v in (headers or {}).items():
        conn.putheader(k, v)
    conn.endheaders()
    conn.send(body)
    resp = conn.getresponse()
    out = resp.status, json.loads(resp.read())
    conn.close()
    return out


SCHEMA_REQ = json.dumps({"model": "m", "messages": [], "response_format": {"type": "json_schema", "json_schema": {
    "name": "x", "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}).encode()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.org"])
def test_non_loopback_hosts_are_refused(host, capsys):
    with pytest.raises(ConfigError, match="loopback"):
        EchoJudgeServer(host=host)
    assert main(["--host", host, "--port", "0"]) == 2
    assert "loopback" in capsys.readouterr().err


def test_oversized_body_is_refused_unread_with_413():
    with EchoJudgeServer(max_body_bytes=1024) as server:
        status, payload = _post(server, b"{}", length=50_000_000)  # claimed, never sent
        assert status == 413 and "1024" in payload["error"]["message"]
        status, payload = _post(server, SCHEMA_REQ)  # the server still answers normal requests
        assert status == 200 and json.loads(payload["choices"][0]["message"]["content"]) == {"ok": True}
    assert server.requests == 1


def test_malformed_json_is_a_400_not_a_dropped_connection(echo):
    assert _post(echo, b"{not json")[0] == 400
    assert _post(echo, b"[1, 2]")[0] == 400


def _stalled(server: EchoJudgeServer, data: bytes) -> tuple[bytes, float]:
    """Send `data` (an incomplete request) and stall; return what the server sends back before it
    closes the connection, and how long that took (the client gives up after 10 s)."""
    import socket
    import time

    host, port = server.httpd.server_address[:2]
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(data)
        start, got = time.monotonic(), b""
        try:
            while chunk := sock.recv(4096):
                got += chunk
        except TimeoutError:
            pytest.fail("the server kept the stalled connection open for 10 s")
        return got, time.monotonic() - start


@pytest.mark.parametrize("stall", ["body", "headers"])
def test_a_stalled_upload_is_dropped_after_the_read_timeout(stall):
    """Issue 14 defect 12: headers sent, then silence (or a header line never finished): the server
    answers 408 (body) or hangs up (headers) after its read timeout, instead of holding a thread."""
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n{\"model\": ")
    with EchoJudgeServer(read_timeout_s=0.5) as server:
        got, took = _stalled(server, head if stall == "body" else head[:40])
        assert 0.4 <= took < 3.0, took
        if stall == "body":
            assert got.startswith(b"HTTP/1.1 408") and b"not received within 0.5s" in got
        else:
            assert got == b""
        assert _post(server, SCHEMA_REQ)[0] == 200  # and the server still serves everyone else


def test_configured_key_is_required():
    with EchoJudgeServer(api_key="k3y") as server:
        assert _post(server, SCHEMA_REQ)[0] == 401
        assert _post(server, SCHEMA_REQ, {"Authorization": "Bearer wrong"})[0] == 401
        assert _post(server, SCHEMA_REQ, {"Authorization": "Bearer k3y"})[0] == 200
    assert server.requests == 1


async def test_rewards_send_the_configured_key(monkeypatch):
    monkeypatch.setenv("ECHO_TEST_KEY", "k3y")
    clear_sessions()
    with EchoJudgeServer(api_key="k3y") as server:
        uv = make_uv_rewards(judge_url=server.url, model="echo",
                             judge={"timeout_s": 10.0, "api_key_env": "ECHO_TEST_KEY"})
        prompts = [[{"role": "user", "content": "Find the cheapest flight"}]]
        completions = [[{"role": "assistant", "content": "done"}]]
        assert await uv.process(prompts, completions) == [0.1]  # would be None had the key been refused
        await uv.process.session.aclose()
    clear_sessions()
    assert server.requests > 0


async def test_rewards_over_http_one_run_per_rollout(echo):
    uv = make_uv_rewards(judge_url=echo.url, model="echo", judge={"timeout_s": 10.0})
    first = Image.new("RGB", (16, 16), "white")
    prompts = [[{"role": "user", "content": [{"type": "image", "image": first},
                                             {"type": "text", "text": "Find the cheapest flight"}]}]] * 2
    completions = [[{"role": "assistant", "content": "go", "tool_calls": [
                        {"type": "function", "function": {"name": "click", "arguments": {"x": 1}}}]},
                    {"role": "tool", "name": "click",
                     "content": [{"type": "image", "image": Image.new("RGB", (16, 16), (j, 0, 0))}]},
                    {"role": "assistant", "content": f"answer {j}"}] for j in range(2)]
    metrics: dict = {}
    proc, outc = await asyncio.gather(
        uv.process(prompts, completions, log_metric=lambda k, v: metrics.setdefault(k, v)),
        uv.outcome(prompts, completions))
    # the echo judge is deterministic: its smallest rescoring reply earns 0.5 of 5 points (0.1),
    # tagged "consistent" (echo_reply: a "contradiction" would let code veto it, V6); its side-effects
    # reply claims a penalty and a critical-point violation with no screenshot evidence, so both are
    # ignored (unsupported_claims) and its outcome vote (true) stands
    assert proc == [0.1, 0.1] and outc == [1.0, 1.0]
    assert metrics["uv_process/failure_rate"] == 0.0
    assert uv.process.session.runs == 2
    # 12 calls for the first rollout (rubric, action scoring, 2 relevance, 2 evidence, reality notes,
    # side effects, rescoring, outcome, 2 diagnosis) and 10 for the second: the rubric and the shared
    # white screen's relevance row were asked for once; the server saw exactly those 22 requests
    assert metrics["uv/judge_calls_per_rollout"] == 11.0 and echo.requests == 22
    await uv.process.session.aclose()


@pytest.mark.slow
def test_grpo_recipe_with_a_judge_url(echo, tmp_path, capsys):
    pytest.importorskip("trl")
    spec = importlib.util.spec_from_file_location("grpo_train", REPO / "recipes" / "grpo_train.py")
    recipe = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = recipe  # its dataclass resolves annotations there
    spec.loader.exec_module(recipe)
    rc = recipe.main(["--config", str(REPO / "recipes" / "configs" / "train_smoke.yaml"), "--judge_url", echo.url,
                      "--judge_model", "echo", "--max_completion_length", "8", "--no_save",
                      "--output_dir", str(tmp_path)])
    assert rc == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["uv_outcome/failure_rate"] == 0.0 and last["rewards/uv_outcome/mean"] is not None
    assert echo.requests > 0
