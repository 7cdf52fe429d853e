"""`verifier.judge.http`: the POST the judge sends and how it reads every kind of reply.

The retry and error layers above it were written against the SDK's exceptions, so each status
is checked against what ``AsyncOpenAI`` itself raises for the same response (class, message,
``body``), and the loopback tests run the whole judge with the SDK's request layer disabled.
"""
from __future__ import annotations

import asyncio
import gc
import json
import socket
import struct
import threading
import time
import warnings

import aiohttp
import openai
import pytest
from judge_server import fast_config, ok
from pydantic import BaseModel

from verifier.judge import Message, make_judge
from verifier.judge.endpoints import EndpointPool, Tally
from verifier.judge.http import ChatClient, MalformedReply, httpx, parse_completion, status_error

URL = "http://judge.test/v1"
COMPLETION = {"id": "c1", "object": "chat.completion", "created": 0, "model": "served",
              "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                           "message": {"role": "assistant", "content": '{"ok": true}', "reasoning_content": None}}],
              "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
              "prompt_logprobs": None, "kv_transfer_params": None}  # vLLM's extra fields


class RawServer:
    """A loopback HTTP/1.1 server that records each request's raw bytes and answers by `mode`:
    ``ok`` (a 200 chat completion), ``close`` (reads the request, closes without a reply),
    ``reset`` (a TCP RST), ``hang`` (never answers), or an int status with a JSON error body."""

    def __init__(self, mode: object = "ok") -> None:
        self.mode, self.seen = mode, []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = int(next(v for k, v in (ln.split(b":", 1) for ln in head.split(b"\r\n")[1:])
                          if k.strip().lower() == b"content-length"))
        while len(body) < length:
            body += conn.recv(65536)
        self.seen.append((head.decode(), body))
        if self.mode == "hang":
            time.sleep(3)
        elif self.mode == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif self.mode != "close":
            status = 200 if self.mode == "ok" else int(self.mode)  # type: ignore[call-overload]
            payload = json.dumps(COMPLETION if status == 200 else {"error": {"message": "slow down"}}).encode()
            conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nRetry-After: 2\r\nConnection: close\r\n"
                         f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
            time.sleep(0.2)
        conn.close()

    def stop(self) -> None:
        self.sock.close()


def reply(status: int, body: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """A response as an HTTP client hands it over: sent, received and read."""
    transport = httpx.MockTransport(lambda request: httpx.Response(status, content=body.encode(),
                                                                   headers=headers or {}))
    with httpx.Client(transport=transport) as client:
        return client.post(URL + "/chat/completions", content=b"{}")


async def test_the_request_is_the_given_bytes_with_the_key():
    srv = RawServer()
    client = ChatClient(srv.url, "sk-test", 30.0, verify=True)
    body = b'{"model":"m","messages":[{"role":"user","content":"\xc3\xa9"}]}'
    got = await client.chat(body, 7.5)
    (head, sent), = srv.seen
    lines = head.split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
    assert lines[0] == "POST /v1/chat/completions HTTP/1.1" and sent == body
    assert headers["authorization"] == "Bearer sk-test" and headers["content-type"] == "application/json"
    assert got.choices[0].message.content == '{"ok": true}' and got.choices[0].finish_reason == "stop"
    assert got.usage is not None and (got.usage.prompt_tokens, got.usage.completion_tokens) == (12, 3)
    assert got.model == "served" and "sk-test" not in repr(client)
    pieces = [b'{"model":"m","messages":[{"role":"user","content":"', b"data:image/png;base64," + b"A" * 300_000,
              b'"}]}']
    await client.chat(pieces, 7.5)  # written piece by piece, under one Content-Length
    (head, sent) = srv.seen[1]
    assert sent == b"".join(pieces) and f"Content-Length: {len(sent)}" in head
    assert "chunked" not in head.lower()
    await client.close()
    srv.stop()


async def test_the_environments_proxy_is_used_and_netrc_is_not_read(monkeypatch, tmp_path):
    """HTTP_PROXY / NO_PROXY are honoured (read once, when the client is made); a .netrc entry for
    the judge's host neither replaces nor clashes with the API key."""
    proxy = RawServer()
    (tmp_path / ".netrc").write_text("machine judge.test login someone password netrc-secret\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(tmp_path / ".netrc"))
    monkeypatch.setenv("HTTP_PROXY", proxy.url.removesuffix("/v1"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    client = ChatClient("http://judge.test/v1", "sk-test", 30.0, verify=True)
    await client.chat(b"{}", 5.0)
    (head, _), = proxy.seen
    assert head.startswith("POST http://judge.test/v1/chat/completions HTTP/1.1")
    assert "Authorization: Bearer sk-test" in head and "netrc-secret" not in head
    await client.close()
    monkeypatch.setenv("NO_PROXY", "judge.test")
    assert ChatClient("http://judge.test/v1", "k", 30.0, verify=True)._proxy is None
    proxy.stop()


async def test_a_timeout_over_five_seconds_is_not_rounded_up_to_a_whole_second():
    """aiohttp rounds limits over 5 s up to the next whole second of the loop's clock: a call's
    share of a deadline (say 20.3 s) would then end up to a second late, at every call."""
    srv = RawServer("hang")
    client = ChatClient(srv.url, "k", 30.0, verify=True)
    assert client.timeout(20.3).total == 20.3 and client.timeout(None).total == 30.0
    assert client.timeout(20.3).ceil_threshold > 3600  # never rounded (the check below misses 1 in 20)
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(openai.APITimeoutError):
        await client.chat(b"{}", 0.3)
    assert loop.time() - start < 0.9
    from aiohttp.helpers import ceil_timeout

    limit = ceil_timeout(20.3, client.timeout(20.3).ceil_threshold)  # what aiohttp arms for the request
    assert abs(limit.when() - (loop.time() + 20.3)) < 0.05
    await client.close()
    srv.stop()


async def test_an_error_status_from_the_wire_keeps_its_class_body_and_headers():
    srv = RawServer(429)
    client = ChatClient(srv.url, "k", 30.0, verify=True)
    with pytest.raises(openai.RateLimitError) as err:
        await client.chat(b"{}", 5.0)
    assert str(err.value) == "Error code: 429 - slow down" and err.value.body == {"message": "slow down"}
    assert err.value.response.headers["retry-after"] == "2"  # read by the transport's Retry-After handling
    assert str(err.value.request.url) == srv.url + "/chat/completions"
    await client.close()
    srv.stop()


@pytest.mark.parametrize("status,body,cls", [
    (400, {"error": {"message": "This model's maximum context length is 4096 tokens", "type": "BadRequestError"}},
     openai.BadRequestError),
    (401, {"error": {"message": "bad key"}}, openai.AuthenticationError),
    (403, {"error": "forbidden"}, openai.PermissionDeniedError),
    (404, {"detail": "Not Found"}, openai.NotFoundError),
    (409, "conflict", openai.ConflictError),
    (422, {"detail": [{"msg": "field required"}]}, openai.UnprocessableEntityError),
    (429, {"error": {"message": "slow down"}}, openai.RateLimitError),
    (500, "", openai.InternalServerError),
    (503, "<html>503 Service Unavailable</html>", openai.InternalServerError),
    (418, {"error": "teapot"}, openai.APIStatusError),
])
def test_error_statuses_raise_what_the_sdk_raises(status, body, cls):
    text = body if isinstance(body, str) else json.dumps(body)
    ours = status_error(reply(status, text, {"retry-after": "2"}))
    sdk = openai.AsyncOpenAI(api_key="k", base_url=URL)._make_status_error_from_response(reply(status, text))
    assert type(ours) is cls is type(sdk)
    assert ours.body == sdk.body and ours.status_code == status  # the SDK's message varies by version
    detail = body.get("error", {}).get("message") if isinstance(body, dict) and isinstance(body.get("error"), dict) else None
    assert str(ours) == f"Error code: {status}" + (f" - {detail}" if detail else "")
    assert ours.response.headers["retry-after"] == "2"  # read by the transport's Retry-After handling


@pytest.mark.parametrize("body,says", [
    ("<html><body><h1>502 Bad Gateway</h1></body></html>", "not valid JSON: '<html><body><h1>502 Bad Gateway"),
    ('{"id": "x", "choices": [{"ind', "not valid JSON"),
    ('{"error": {"message": "upstream timed out"}}', "not a chat completion"),
    ('{"choices": "none"}', "not a chat completion"),
    ('{"choices": [{"finish_reason": "stop"}]}', "not a chat completion"),  # no message
    ('{"choices": [{"message": {"content": ["a", "list"]}}]}', "not a chat completion"),
    ("[1, 2]", "not a chat completion"),
])
def test_a_200_that_is_not_a_chat_completion_is_malformed(body, says):
    with pytest.raises(MalformedReply, match="HTTP 200 from http://j/v1 whose body is " + says[:14]) as err:
        parse_completion(body.encode(), "http://j/v1")
    assert says in str(err.value)


def test_odd_token_counts_are_dropped_not_fatal():
    got = parse_completion(json.dumps({**COMPLETION, "usage": {"prompt_tokens": "many"}}).encode(), URL)
    assert got.usage is None and got.choices[0].message.content == '{"ok": true}'
    got = parse_completion(json.dumps({"choices": [{"message": {"content": None}}]}).encode(), URL)
    assert got.choices[0].message.content is None and got.usage is None and got.model is None


@pytest.mark.parametrize("mode,cls", [
    ("refused", openai.APIConnectionError),
    ("close", openai.APIConnectionError),
    ("reset", openai.APIConnectionError),
    ("hang", openai.APITimeoutError),
])
async def test_transport_errors_are_the_sdks_connection_errors(mode, cls, unused_url):
    srv = RawServer(mode)
    url = unused_url if mode == "refused" else srv.url
    client = ChatClient(url, "k", 30.0, verify=True)
    start = time.monotonic()
    with pytest.raises(cls) as err:
        await client.chat(b"{}", 0.5)  # the per-call timeout, not the client's 30 s
    assert type(err.value) is cls and str(err.value.request.url) == url + "/chat/completions"
    assert isinstance(err.value.__cause__, aiohttp.ClientError | TimeoutError)
    assert time.monotonic() - start < 2.5
    await client.close()
    srv.stop()


def test_a_client_whose_loop_closed_is_abandoned_without_unclosed_warnings(caplog):
    """Offline scoring runs one event loop per `asyncio.run`; the pools of finished loops are
    dropped, and their sessions must not log aiohttp's "Unclosed client session" when collected."""
    srv = RawServer()
    pool = EndpointPool(fast_config(srv.url))

    async def one() -> None:
        await pool.send({"model": "judge", "messages": []}, Tally(), stage="test")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(one())
        asyncio.run(one())  # drops the first loop's pool
        client = pool._pools[next(iter(pool._pools))].endpoints[0].client
        asyncio.run(pool.aclose())  # another loop: the second loop's pool is forgotten too
        del client
        gc.collect()
    assert len(srv.seen) == 2
    assert not [w for w in caught if "Unclosed" in str(w.message)]
    assert "Unclosed" not in caplog.text
    srv.stop()


class Answer(BaseModel):
    ok: bool


async def test_the_judge_never_uses_the_sdks_request_layer(server, monkeypatch):
    """The whole judge against a loopback server with ``AsyncOpenAI`` unusable: requests go
    through `ChatClient` (the point of it: the SDK's per-request models cost ~1.3 ms each)."""
    def refuse(*args, **kwargs):
        raise AssertionError("AsyncOpenAI used")

    monkeypatch.setattr(openai.AsyncOpenAI, "__init__", refuse)
    monkeypatch.setattr(openai.AsyncOpenAI, "post", refuse)
    server.push(ok('{"ok": true}'))
    judge = make_judge(fast_config(server.url))
    got = await judge.complete([Message.user("done?")], Answer, stage="outcome")
    assert got.parsed.ok is True and got.usage.prompt_tokens == 10 and got.model == "served-judge"
    await judge.aclose()
