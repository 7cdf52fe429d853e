"""`verifier.judge.http`: the POST the judge sends and how it reads every kind of reply.

The retry and error layers above it were written against the SDK's exceptions, so each status
is checked against what ``AsyncOpenAI`` itself raises for the same response (class, message,
``body``), and the loopback tests run the whole judge with the SDK's request layer disabled.
"""
from __future__ import annotations

import json

import openai
import pytest
from judge_server import fast_config, ok
from pydantic import BaseModel

from verifier.judge import Message, make_judge
from verifier.judge.http import ChatClient, MalformedReply, httpx, parse_completion, status_error

URL = "http://judge.test/v1"
COMPLETION = {"id": "c1", "object": "chat.completion", "created": 0, "model": "served",
              "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                           "message": {"role": "assistant", "content": '{"ok": true}', "reasoning_content": None}}],
              "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
              "prompt_logprobs": None, "kv_transfer_params": None}  # vLLM's extra fields


def client_with(handler) -> ChatClient:
    client = ChatClient(URL, "sk-test", 30.0, verify=True)
    client.http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return client


def reply(status: int, body: str, headers: dict[str, str] | None = None) -> httpx.Response:
    """A response as an HTTP client hands it over: sent, received and read."""
    transport = httpx.MockTransport(lambda request: httpx.Response(status, content=body.encode(),
                                                                   headers=headers or {}))
    with httpx.Client(transport=transport) as client:
        return client.post(URL + "/chat/completions", content=b"{}")


async def test_the_request_is_the_given_bytes_with_the_key_and_timeout():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=COMPLETION)

    client = client_with(handler)
    body = b'{"model":"m","messages":[{"role":"user","content":"\xc3\xa9"}]}'
    got = await client.chat(body, 7.5)
    (req,) = seen
    assert req.method == "POST" and str(req.url) == URL + "/chat/completions"
    assert req.content == body and req.headers["authorization"] == "Bearer sk-test"
    assert req.headers["content-type"] == "application/json"
    assert req.extensions["timeout"] == {"connect": 7.5, "read": 7.5, "write": 7.5, "pool": 7.5}
    assert got.choices[0].message.content == '{"ok": true}' and got.choices[0].finish_reason == "stop"
    assert got.usage is not None and (got.usage.prompt_tokens, got.usage.completion_tokens) == (12, 3)
    assert got.model == "served" and "sk-test" not in repr(client)
    await client.close()


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


@pytest.mark.parametrize("exc,cls", [
    (httpx.ConnectError("refused"), openai.APIConnectionError),
    (httpx.RemoteProtocolError("server disconnected"), openai.APIConnectionError),
    (httpx.ReadTimeout("slow"), openai.APITimeoutError),
    (httpx.ConnectTimeout("slow"), openai.APITimeoutError),
])
async def test_transport_errors_are_the_sdks_connection_errors(exc, cls):
    def handler(request: httpx.Request) -> httpx.Response:
        exc.request = request
        raise exc

    client = client_with(handler)
    with pytest.raises(cls) as err:
        await client.chat(b"{}", 1.0)
    assert type(err.value) is cls and str(err.value.request.url) == URL + "/chat/completions"
    assert err.value.__cause__ is exc
    await client.close()


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
