"""One chat-completions POST on the SDK's HTTP client, without the SDK's per-request layer.

Why: ``AsyncOpenAI.post`` builds request-option and header models for every request and turns
every reply into the full ``ChatCompletion`` model tree: ~1.3 ms of client CPU per request on this
2-core machine (3.2 ms against 1.9 ms for the same POST on the same HTTP client). A relevance
fan-out sends 40-75 requests back to back from one event loop before the last one leaves, so that
layer was ~50-100 ms of every verification's critical path at M = 50-100 (issue 10).

What is kept from the SDK: its HTTP client (``openai.DefaultAsyncHttpxClient``: the SDK's
connection limits and redirect policy, our shared TLS context) and its exception classes with its
mapping of status codes to them (``BadRequestError`` for 400, ``RateLimitError`` for 429, ...), so
the retry and error layers above (`endpoints`, `openai_compat`) see exactly what they saw before.
What is ours: the body is already JSON bytes (`jsonbody`), and a reply is read into `Completion`,
which holds only what the judge reads (content, finish reason, token counts, model).
"""
from __future__ import annotations

import json
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

try:  # the HTTP library the SDK is built on (httpx2 in recent SDKs, httpx before)
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx  # type: ignore[no-redef]

#: The SDK's classes per status code (what ``AsyncOpenAI`` raises for the same reply).
STATUS_ERRORS: dict[int, type[openai.APIStatusError]] = {
    400: openai.BadRequestError, 401: openai.AuthenticationError, 403: openai.PermissionDeniedError,
    404: openai.NotFoundError, 409: openai.ConflictError, 422: openai.UnprocessableEntityError,
    429: openai.RateLimitError}


class MalformedReply(Exception):
    """An HTTP 200 whose body is not an OpenAI chat completion: a transport fault, retried."""


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CompletionMessage(_Lenient):
    content: str | None = None


class Choice(_Lenient):
    message: CompletionMessage
    finish_reason: str | None = None


class PromptTokenDetails(_Lenient):
    cached_tokens: int | None = None


class TokenUsage(_Lenient):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: PromptTokenDetails | None = None
    """vLLM (``--enable-prompt-tokens-details``) and OpenAI report the prompt tokens served from
    the prefix cache here; absent when the server does not say."""

    @property
    def cached_prompt_tokens(self) -> int | None:
        return self.prompt_tokens_details.cached_tokens if self.prompt_tokens_details else None


class Completion(_Lenient):
    """The part of a chat completion the judge reads. ``choices`` must be a list of messages;
    token counts that are not numbers are dropped (accounting only), as the SDK's lenient
    construction would have kept them without complaint."""

    choices: list[Choice]
    usage: TokenUsage | None = None
    model: str | None = None

    @field_validator("usage", mode="wrap")
    @classmethod
    def _usage_or_none(cls, value: Any, handler: Any) -> TokenUsage | None:
        try:
            return handler(value)
        except ValidationError:
            return None


def status_error(response: httpx.Response) -> openai.APIStatusError:
    """The SDK's exception for an error status: same class, message (``Error code: N`` and the
    error's ``message`` when it has one) and ``body`` (the parsed ``error`` object, else the body)."""
    message = f"Error code: {response.status_code}"
    text = response.text.strip()
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = text
    data = body.get("error", body) if isinstance(body, dict) else body
    detail = data.get("message") if isinstance(data, dict) else None
    if isinstance(detail, str) and detail:
        message += f" - {detail}"
    cls = STATUS_ERRORS.get(response.status_code) or (
        openai.InternalServerError if response.status_code >= 500 else openai.APIStatusError)
    return cls(message, response=response, body=data)


def parse_completion(content: bytes, url: str) -> Completion:
    """A 200's body as a `Completion`; anything else is a `MalformedReply` (a proxy's HTML page,
    cut JSON, a gateway's error object)."""
    try:
        return Completion.model_validate_json(content)
    except ValidationError as exc:
        snippet = content[:160].decode("utf-8", "replace")
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise MalformedReply(f"HTTP 200 from {url} whose body is not valid JSON: {snippet!r}") from None
        raise MalformedReply(f"HTTP 200 from {url} whose body is not a chat completion: {snippet!r}") from None


class ChatClient:
    """POSTs chat completions to one endpoint. One per endpoint per event loop (`endpoints`)."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float, verify: Any, *,
                 connections: int | None = None) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        # Every connection the semaphore lets open is kept alive: with the SDK's 100 kept of 1000,
        # a burst of fan-out requests over 100 closed and reopened connections on every wave, and
        # the pool scans all its connections per request (a reward service spent ~0.1 s of CPU per
        # verification there).
        limits = (httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
                  if connections else None)
        kw = {"limits": limits} if limits is not None else {}
        self.http = openai.DefaultAsyncHttpxClient(timeout=timeout_s, verify=verify, **kw)
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json",
                         "Accept": "application/json"}

    def __repr__(self) -> str:  # the headers hold the API key
        return f"ChatClient({self.url!r})"

    async def chat(self, body: bytes, timeout_s: float | None) -> Completion:
        """POST `body`; raises the SDK's ``APITimeoutError`` / ``APIConnectionError`` /
        ``APIStatusError`` subclasses, or `MalformedReply`."""
        try:
            response = await self.http.post(self.url, content=body, headers=self._headers,
                                            timeout=timeout_s if timeout_s is not None else httpx.USE_CLIENT_DEFAULT)
        except httpx.TimeoutException as exc:
            raise openai.APITimeoutError(request=exc.request) from exc
        except httpx.HTTPError as exc:  # refused, reset, protocol errors
            raise openai.APIConnectionError(request=_request_of(exc, self.url)) from exc
        if not response.is_success:
            raise status_error(response)
        return parse_completion(response.content, self.url)

    async def close(self) -> None:
        await self.http.aclose()


def _request_of(exc: httpx.HTTPError, url: str) -> httpx.Request:
    try:
        return exc.request
    except RuntimeError:  # an error raised before a request existed
        return httpx.Request("POST", url)
