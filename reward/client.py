"""The one HTTP client of the reward service: every trainer-side caller (TRL's `reward.remote`,
OpenRLHF's `reward.openrlhf`, verl's `reward.verl`) posts through here.

Why one module: a base install (`pip install cua-verifier`, no extras) must be able to call the
service, since OpenRLHF swallows a reward function's exception and a missing import would only
show up as a crash far away. So the client uses the HTTP library the OpenAI SDK (a base
dependency) is built on, found once in `verifier.judge.http`, and the retry policy (tenacity, also
a base dependency) is written once for the sync and async callers:

- 429 and 503 are retried after the service's `Retry-After` (it sends 503 while its judge breaker
  is open, 429 while its queue is full); connection failures with jittered exponential backoff;
- every attempt and every wait stays inside one request deadline (`deadline_s`): a wait that would
  end past it is not started, and each attempt's timeout is cut to what is left;
- any other status is a `RemoteError` carrying the service's error type, at once.
"""
from __future__ import annotations

import os
import random
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_before_delay,
)

from verifier.errors import CuaVerifierError
from verifier.judge.http import httpx  # the SDK's HTTP library: present on a base install

ENV_URL, ENV_KEY = "CUA_REWARD_URL", "CUA_REWARD_API_KEY"
RETRY_STATUSES = (429, 503)


class RemoteError(CuaVerifierError):
    """The service answered that this rollout could not be verified (or could not be reached)."""

    def __init__(self, message: str, *, error_type: str = "RemoteError", status: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type, self.status, self.message = error_type, status, message
        self.retry_after = retry_after  # a service answering it sends this as Retry-After


class _Retry(Exception):
    """One attempt that may be tried again: `kind` is '429', '503' or 'connect'."""

    def __init__(self, kind: str, detail: str, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.retry_after = kind, detail, retry_after


class ClientSettings(BaseModel):
    """Where the service is and how hard to try (plain data, so callers pickle)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(default_factory=lambda: os.environ.get(ENV_URL, "http://127.0.0.1:8012"))
    api_key_env: str = ENV_KEY
    timeout_s: float = Field(default=900.0, gt=0, description="one HTTP attempt")
    max_retries: int = Field(default=8, ge=0, description="retries after 429/503/connection errors")
    deadline_s: float = Field(default=900.0, gt=0, description="one request, all attempts and waits included")

    def headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}


def retry_after(value: str | None) -> float | None:
    """Seconds from a `Retry-After` header (a number; an HTTP date or junk means 'not said')."""
    try:
        return max(0.05, float(value)) if value else None
    except ValueError:
        return None


def _wait(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome else None
    said = exc.retry_after if isinstance(exc, _Retry) else None
    wait = said if said is not None else min(30.0, 0.5 * 2.0 ** (state.attempt_number - 1))
    return wait + random.uniform(0, 0.25 * wait)  # de-synchronise the ranks


def _policy(settings: ClientSettings, retries: dict[str, int] | None) -> dict[str, Any]:
    def count(state: RetryCallState) -> None:  # before each wait: one retry of this kind
        exc = state.outcome.exception() if state.outcome else None
        if retries is not None and isinstance(exc, _Retry):
            retries[exc.kind] = retries.get(exc.kind, 0) + 1

    return {"retry": retry_if_exception_type(_Retry), "wait": _wait, "reraise": True, "before_sleep": count,
            "stop": stop_after_attempt(settings.max_retries + 1) | stop_before_delay(settings.deadline_s)}


def _classify(resp: Any) -> Any:
    """The parsed body of a 200, else `_Retry` (429/503) or `RemoteError` raised."""
    if resp.status_code == 200:
        return resp.json()
    if resp.status_code in RETRY_STATUSES:
        raise _Retry(str(resp.status_code), resp.text[:300], retry_after(resp.headers.get("Retry-After")))
    raise error_from(resp)


def error_from(resp: Any) -> RemoteError:
    """The service's `{"error": {"type", "message"}}` as a `RemoteError` (any body tolerated)."""
    try:
        err = resp.json().get("error") or {}
    except (ValueError, AttributeError):
        err = {}
    err = err if isinstance(err, dict) else {}
    return RemoteError(str(err.get("message") or resp.text[:300]), error_type=str(err.get("type") or "HTTPError"),
                       status=resp.status_code)


def _gave_up(exc: _Retry, attempts: int) -> RemoteError:
    return RemoteError(f"gave up after {attempts} attempts: {exc.detail}", error_type="ServiceUnavailable",
                       status=None if exc.kind == "connect" else int(exc.kind))


def _timeout(settings: ClientSettings, started: float) -> float:
    return max(0.05, min(settings.timeout_s, settings.deadline_s - (time.monotonic() - started)))


def post(settings: ClientSettings, path: str, body: Any, params: dict[str, str] | None = None,
         retries: dict[str, int] | None = None) -> Any:
    """POST `body` as JSON (blocking: OpenRLHF and verl call reward functions from threads)."""
    started, attempts = time.monotonic(), 0
    url = settings.url.rstrip("/") + path
    try:
        for attempt in Retrying(**_policy(settings, retries)):
            with attempt:
                attempts += 1
                try:
                    resp = httpx.post(url, json=body, params=params, headers=settings.headers(),
                                      timeout=_timeout(settings, started))
                except httpx.TransportError as exc:
                    raise _Retry("connect", f"{type(exc).__name__}: {exc}") from exc
                return _classify(resp)
    except _Retry as exc:
        raise _gave_up(exc, attempts) from exc
    raise AssertionError("unreachable")  # pragma: no cover


async def apost(settings: ClientSettings, client: Any, path: str, body: Any,
                params: dict[str, str] | None = None, retries: dict[str, int] | None = None,
                headers: dict[str, str] | None = None) -> Any:
    """The same on an `AsyncClient` (made by `async_client`), for callers on an event loop.

    `headers`: extra request headers (`X-CUA-Task`: the routing key of a replicated service)."""
    started, attempts = time.monotonic(), 0
    try:
        async for attempt in AsyncRetrying(**_policy(settings, retries)):
            with attempt:
                attempts += 1
                try:
                    resp = await client.post(path, json=body, params=params, headers=headers,
                                             timeout=_timeout(settings, started))
                except httpx.TransportError as exc:
                    raise _Retry("connect", f"{type(exc).__name__}: {exc}") from exc
                return _classify(resp)
    except _Retry as exc:
        raise _gave_up(exc, attempts) from exc
    raise AssertionError("unreachable")  # pragma: no cover


def async_client(settings: ClientSettings, max_connections: int = 64) -> Any:
    """An `AsyncClient` on the service's base URL, with the API key header (one per event loop)."""
    return httpx.AsyncClient(base_url=settings.url.rstrip("/"), headers=settings.headers(),
                             timeout=settings.timeout_s, limits=httpx.Limits(max_connections=max_connections))
