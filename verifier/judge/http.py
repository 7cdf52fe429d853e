"""One chat-completions POST on aiohttp, with the OpenAI SDK's exceptions.

Why not the SDK's own client: ``AsyncOpenAI.post`` builds request-option and header models for
every request and turns every reply into the full ``ChatCompletion`` model tree (~1.3 ms of client
CPU per request here, issue 10). Why not its HTTP library (httpx/httpcore) either: its connection
pool re-checks every idle connection (a ``poll`` per socket) each time a request starts or ends, so
a relevance fan-out of 50 requests over ~100 pooled connections cost ~5 ms of CPU per request in
a reward service (0.15-0.25 s per verification at M = 50, issue 21 §3). aiohttp keeps idle
connections in a queue it pops, learns of a server's close from the event loop rather than by
polling, and parses replies in C: ~1.2 ms against ~2.9 ms per 0.8 MB POST measured side by side.

What is kept from the SDK: its exception classes and its mapping of status codes to them
(``BadRequestError`` for 400, ``RateLimitError`` for 429, ...; errors carry an ``httpx.Response``
as the SDK's do), so the retry and error layers above (`endpoints`, `openai_compat`) see exactly
what they saw before. What is ours: the body is already JSON bytes (`jsonbody`), and a reply is
read into `Completion`, which holds only what the judge reads (content, finish reason, token
counts, model).
"""
from __future__ import annotations

import json
import math
import ssl
from collections.abc import Sequence
from typing import Any

import aiohttp
import openai
import yarl
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


class ReplyTooLarge(MalformedReply):
    """A reply body over the call's byte cap: reading stopped there (a judge or proxy answering
    hundreds of megabytes must not be read whole, nor echoed back by a re-ask)."""


#: A reply's byte cap: a chat completion's envelope, then this many bytes per token of the call's
#: reply budget (a token is a few characters; JSON escaping can make one 6 bytes per character).
REPLY_ENVELOPE_BYTES = 64 * 1024
REPLY_BYTES_PER_TOKEN = 32


def reply_byte_cap(max_tokens: int | None) -> int:
    """The most bytes read of a reply to a call allowed `max_tokens` completion tokens."""
    return REPLY_ENVELOPE_BYTES + REPLY_BYTES_PER_TOKEN * max(int(max_tokens or 0), 1024)


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


class PiecesPayload(aiohttp.payload.Payload):
    """A request body written as the pieces it was built from (`jsonbody.body_pieces`), with its
    Content-Length: a body of many screenshots is never joined into one buffer first."""

    def __init__(self, pieces: Sequence[bytes]) -> None:
        super().__init__(pieces, content_type="application/json")
        self._size = sum(map(len, pieces))

    async def write(self, writer: Any) -> None:
        for piece in self._value:
            await writer.write(piece)

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return b"".join(self._value).decode(encoding, errors)


#: Seconds an idle connection is kept: under the 5 s after which uvicorn (vLLM's server) closes
#: one, so a request is never written into a connection the server is closing.
KEEPALIVE_S = 4.0
#: Connections when the caller sets no bound (the SDK's own default limit).
DEFAULT_CONNECTIONS = 1000


def env_proxy(url: str) -> tuple[str | None, aiohttp.BasicAuth | None]:
    """The proxy the environment names for `url` (``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY``,
    as urllib reads them), and its credentials; (None, None) to go direct."""
    try:
        proxy, auth = aiohttp.helpers.get_env_proxy_for_url(yarl.URL(url))
    except LookupError:
        return None, None
    return str(proxy), auth


async def read_bounded(resp: aiohttp.ClientResponse, max_bytes: int | None, url: str) -> bytes:
    """The body, refused (`ReplyTooLarge`) as soon as it passes `max_bytes`: by its declared length
    before a byte is read, else while reading; leaving the context unread closes the connection."""
    if max_bytes is None:
        return await resp.read()
    declared = resp.content_length
    if declared is not None and declared > max_bytes:
        raise ReplyTooLarge(f"HTTP {resp.status} from {url} declares a {declared}-byte body, over this call's "
                            f"{max_bytes}-byte reply cap")
    pieces: list[bytes] = []
    total = 0
    async for piece in resp.content.iter_chunked(256 * 1024):
        total += len(piece)
        if total > max_bytes:
            raise ReplyTooLarge(f"HTTP {resp.status} from {url} sent more than this call's {max_bytes}-byte "
                                "reply cap; reading stopped there")
        pieces.append(piece)
    return b"".join(pieces)


class ChatClient:
    """POSTs chat completions to one endpoint. One per endpoint per event loop (`endpoints`); its
    aiohttp session is opened by the first request, inside that loop."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float, verify: ssl.SSLContext | bool, *,
                 connections: int | None = None) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.timeout_s = timeout_s
        # Every connection the semaphore lets open is kept alive: closing and reopening them on
        # every fan-out wave costs more than holding them (`KEEPALIVE_S`).
        self._limit = connections or DEFAULT_CONNECTIONS
        self._ssl = verify
        # HTTP(S)_PROXY / NO_PROXY are honoured, as by the SDK's client, but read here once: with
        # aiohttp's trust_env every request re-read the environment and parsed ~/.netrc (~10% of a
        # reward service's CPU), and a .netrc entry for the judge's host would clash with our key.
        self._proxy, self._proxy_auth = env_proxy(self.url)
        self._session: aiohttp.ClientSession | None = None
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json",
                         "Accept": "application/json"}

    def __repr__(self) -> str:  # the headers hold the API key
        return f"ChatClient({self.url!r})"

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._limit, keepalive_timeout=KEEPALIVE_S, ssl=self._ssl)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self.timeout(None))
        return self._session

    async def chat(self, body: bytes | Sequence[bytes], timeout_s: float | None,
                   max_bytes: int | None = None) -> Completion:
        """POST `body` (bytes, or the pieces to write one after the other); raises the SDK's ``APITimeoutError`` / ``APIConnectionError`` /
        ``APIStatusError`` subclasses, or `MalformedReply` (`ReplyTooLarge` past `max_bytes`)."""
        timeout = self.timeout(timeout_s)
        try:
            data = body if isinstance(body, bytes) else PiecesPayload(body)
            async with self._open().post(self.url, data=data, headers=self._headers, timeout=timeout,
                                         proxy=self._proxy, proxy_auth=self._proxy_auth) as resp:
                content = await read_bounded(resp, max_bytes, self.url)
                status, headers = resp.status, list(resp.headers.items())
        except TimeoutError as exc:  # aiohttp's connect/read timeouts are TimeoutErrors too
            raise openai.APITimeoutError(request=self.request()) from exc
        except aiohttp.ClientError as exc:  # refused, reset, disconnected, protocol errors
            raise openai.APIConnectionError(request=self.request()) from exc
        if not 200 <= status < 300:
            raise status_error(httpx.Response(status, headers=headers, content=content, request=self.request()))
        return parse_completion(content, self.url)

    def timeout(self, timeout_s: float | None) -> aiohttp.ClientTimeout:
        """The whole request's limit (`timeout_s`, else the client's). aiohttp rounds a limit over its
        ``ceil_threshold`` (5 s) up to a whole second of the loop's clock; a call's share of a
        deadline must end when it says, so nothing is rounded."""
        return aiohttp.ClientTimeout(total=timeout_s if timeout_s is not None else self.timeout_s,
                                     ceil_threshold=math.inf)

    def request(self) -> httpx.Request:
        """The request as the SDK's exceptions name it (method and URL; never the key)."""
        return httpx.Request("POST", self.url)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    def abandon(self) -> None:
        """Forget the session of an event loop that closed without closing it: its sockets died
        with the loop; marking it closed keeps aiohttp from logging "Unclosed client session"
        when it is collected."""
        session, self._session = self._session, None
        if session is not None and not session.closed:
            connector = session.connector
            session.detach()
            if connector is not None:
                connector._close()  # closes what it still holds; no I/O, no loop needed
