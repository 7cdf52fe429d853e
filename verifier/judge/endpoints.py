"""The transport layer: replicas, per-endpoint concurrency, and bounded retries with backoff.

This is the first of exactly two retry layers (the second, re-asking on invalid output, lives in
`openai_compat`). Requests go out through `http.ChatClient` (aiohttp, with the SDK's exception
classes, no SDK retries), so the layers never multiply.

Why per event loop: an HTTP client (its connection pool) and an ``asyncio.Semaphore``
belong to the loop they were first used on. TRL runs async reward functions on a daemon-thread
loop while offline scoring uses ``asyncio.run`` (a fresh loop each time), so clients and
semaphores are created per running loop, keyed by ``id(loop)`` (guarded by a weak reference
against id reuse), and pools of closed loops are dropped.

Load spreading: each attempt goes to the endpoint with the fewest requests in flight or queued
(ties rotate), and an attempt after a connection error avoids the endpoint that just failed.

Faults: timeouts, refused or reset connections, 408/409/429, 5xx and HTTP 200 replies whose body is
not a chat completion (a proxy's HTML page, truncated JSON: `MalformedReply`) are retried; each
endpoint has a `CircuitBreaker` (shared across loops) so a judge that is down fails fast
(`CircuitOpen`) instead of costing every call the whole retry ladder. A judge that is up but flaky
(error answers mixed with successes) gets more attempts (``flaky_retries``): there each attempt is
a fresh draw, while against a dead judge more attempts would only cost time.
"""
from __future__ import annotations

import asyncio
import email.utils
import functools
import logging
import random
import ssl
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import openai
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from .breaker import CircuitBreaker
from .config import JudgeConfig
from .deadline import deadline_at, time_left
from .http import ChatClient, Completion, MalformedReply, httpx
from .jsonbody import body_pieces

log = logging.getLogger("cua_verifier.judge")
create_ssl_context = httpx.create_ssl_context  # the SDK's trust settings (see `http`)

_RETRYABLE_STATUS = {408, 409, 429}
#: How often a caller re-checks a half-open endpoint whose probe is in flight.
PROBE_POLL_S = 0.02
#: An attempt with less time than this left before the deadline is not sent.
MIN_ATTEMPT_S = 0.05


class CircuitOpen(Exception):
    """No endpoint may be asked now: every circuit breaker is open (see `breaker`)."""

    def __init__(self, message: str, retry_in_s: float = 0.0) -> None:
        super().__init__(message)
        self.retry_in_s = retry_in_s  # until the first endpoint's probe may go


class _ShareSpent(Exception):
    """One call's share of the deadline ran out after failed attempts; raised from the last failure
    (not transient: it ends the retries, and `send` re-raises that failure)."""


class DeadlinePassed(Exception):
    """The time budget of the enclosing `deadline` ran out before this attempt could start."""


@dataclass
class Tally:
    """Mutable accounting for one logical call, across both retry layers."""

    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int | None = None  # None: the server never said
    latency_s: float = 0.0  # time spent in HTTP requests (not queueing, not backoff)


@dataclass
class Endpoint:
    url: str
    client: ChatClient
    semaphore: asyncio.Semaphore
    breaker: CircuitBreaker
    in_flight: int = 0  # waiting for the semaphore + running


@dataclass
class _LoopPool:
    loop_ref: weakref.ref
    endpoints: list[Endpoint]
    turn: int = 0
    closed: bool = field(default=False)


def is_transient(exc: BaseException) -> bool:
    """Timeouts, connection errors, 408/409/429, 5xx and malformed 200s are worth retrying."""
    if isinstance(exc, (openai.APIConnectionError, MalformedReply)):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRYABLE_STATUS or exc.status_code >= 500
    return False


def is_server_error(exc: BaseException) -> bool:
    """A 5xx or a 200 that is not a chat completion: the server is up and failed this request."""
    return isinstance(exc, MalformedReply) or (isinstance(exc, openai.APIStatusError) and exc.status_code >= 500)


def retry_after_s(exc: BaseException | None) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` / ``retry-after``: seconds or date)."""
    if not isinstance(exc, openai.APIStatusError):
        return None
    headers = exc.response.headers
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / divisor)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value) if name == "retry-after" else None
            if when is not None:
                return max(0.0, when.timestamp() - time.time())
    return None


class EndpointPool:
    """Owns the clients and semaphores of every replica, per running event loop."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self._pools: dict[int, _LoopPool] = {}
        self._lock = threading.Lock()
        # per endpoint URL, not per loop: an outage is seen by every loop of the process
        self.breakers = {url: CircuitBreaker(config.breaker_failures, config.breaker_cooldown_s,
                                             window=config.breaker_window, ratio=config.breaker_failure_ratio,
                                             stalls=config.breaker_stalls)
                         for url in config.base_urls}

    # ---- per-loop state -----------------------------------------------------------------------
    def _pool(self) -> _LoopPool:
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.get(id(loop))
            if pool is not None and pool.loop_ref() is loop:
                return pool
            self._drop_dead_pools()
            key = self.config.api_key()
            endpoints = [Endpoint(url=url, semaphore=asyncio.Semaphore(self.config.max_concurrency),
                                  breaker=self.breakers[url],
                                  client=ChatClient(url, key, self.config.timeout_s, shared_ssl_context(),
                                                    connections=self.config.max_concurrency))
                         for url in self.config.base_urls]
            pool = _LoopPool(loop_ref=weakref.ref(loop), endpoints=endpoints)
            self._pools[id(loop)] = pool
            return pool

    def _drop_dead_pools(self) -> None:
        for loop_id, pool in list(self._pools.items()):
            loop = pool.loop_ref()
            if loop is None or loop.is_closed():
                del self._pools[loop_id]  # its connections died with the loop
                for ep in pool.endpoints:
                    ep.client.abandon()

    def pick(self, avoid: str | None = None) -> Endpoint:
        """Least in flight; ties rotate; `avoid` (the endpoint that just refused) if possible;
        only endpoints whose breaker lets a request through.

        Raises:
            CircuitOpen: every endpoint's circuit is open.
        """
        pool = self._pool()
        n = len(pool.endpoints)
        start = pool.turn % n
        pool.turn += 1
        order = sorted(pool.endpoints[start:] + pool.endpoints[:start],
                       key=lambda e: (e.url == avoid, e.in_flight))  # stable: ties keep the rotation
        for endpoint in order:
            if endpoint.breaker.acquire():
                return endpoint
        waits = ", ".join(f"{e.url} (retry in {e.breaker.retry_in():.1f}s; last: {e.breaker.last_failure})"
                          for e in pool.endpoints)
        raise CircuitOpen(f"circuit open for every judge endpoint after repeated failures: {waits}",
                          retry_in_s=min(e.breaker.retry_in() for e in pool.endpoints))

    async def aclose(self) -> None:
        """Close the current loop's clients; forget pools of other loops."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            pools, self._pools = self._pools, {}
        for loop_id, pool in pools.items():
            if loop is not None and loop_id == id(loop) and pool.loop_ref() is loop:
                for ep in pool.endpoints:
                    await ep.client.close()
            elif (other := pool.loop_ref()) is None or other.is_closed():
                for ep in pool.endpoints:
                    ep.client.abandon()

    # ---- one request with transport retries ---------------------------------------------------
    async def send(self, request: dict[str, Any], tally: Tally, *, stage: str) -> Any:
        """POST one chat completion, retrying transient failures; re-raises the last error."""
        left = time_left()
        if left is None:
            return await self._send(request, tally, stage=stage, outer_end=None)
        # one call's share of the enclosing deadline (see JudgeConfig.call_deadline_share)
        now = asyncio.get_running_loop().time()
        with deadline_at(now + max(left, 0.0) * self.config.call_deadline_share):
            return await self._send(request, tally, stage=stage, outer_end=now + left)

    async def _send(self, request: dict[str, Any], tally: Tally, *, stage: str, outer_end: float | None) -> Any:
        cfg = self.config
        avoid: list[str | None] = [None]
        last: list[BaseException | None] = [None]
        flaky = [False]  # the last failure was an error answer from an endpoint that answers others

        def limit() -> int:
            return max(cfg.transport_retries, cfg.flaky_retries if flaky[0] else 0) + 1

        def delay_after(attempt: int, exc: BaseException | None) -> float:
            asked = retry_after_s(exc)
            if asked is not None:
                delay = min(asked, cfg.retry_after_max_s)
            else:
                # flaky retries (past transport_retries) pace at the ladder's last step: the judge
                # answers, so there is no outage to wait out, only load to spread
                steps = min(attempt, max(cfg.transport_retries, 1))
                backoff = cfg.backoff_initial_s * 2 ** (steps - 1)
                delay = min(backoff, cfg.backoff_max_s) + random.uniform(0, cfg.backoff_jitter_s)
            left = time_left()
            return delay if left is None else max(0.0, min(delay, left))  # wake at the deadline

        def warn(attempt: int, exc: BaseException | None, delay: float) -> None:
            log.warning("judge transport error (stage=%s, attempt %d/%d): %s; retrying in %.2fs",
                        stage, attempt, limit(), describe(exc), delay)

        def failure(state: RetryCallState) -> BaseException | None:
            return state.outcome.exception() if state.outcome else None

        async def attempt() -> Any:
            return await self._attempt(request, tally, avoid, last, flaky, outer_end)

        try:
            # The first attempt runs without the retry machinery: nearly every call succeeds on it,
            # and setting up tenacity's loop costs ~80 us of CPU per call (~50 calls per
            # verification). From the second attempt on, tenacity runs the same policy, its
            # attempt numbers shifted by the one made here.
            try:
                return await attempt()
            except BaseException as exc:
                if not is_transient(exc) or limit() <= 1:
                    raise
                first = exc
            delay = delay_after(1, first)
            warn(1, first, delay)
            await asyncio.sleep(delay)
            retrying = AsyncRetrying(
                stop=lambda state: state.attempt_number + 1 >= limit(),
                wait=lambda state: delay_after(state.attempt_number + 1, failure(state)),
                retry=retry_if_exception(is_transient),
                before_sleep=lambda state: warn(state.attempt_number + 1, failure(state),
                                                state.next_action.sleep if state.next_action else 0.0),
                reraise=True)
            response = None
            async for retry in retrying:  # CircuitOpen is not transient: it ends the loop at once
                with retry:
                    response = await attempt()
            return response
        except _ShareSpent as spent:
            raise spent.__cause__ from None  # type: ignore[misc]

    async def _attempt(self, request: dict[str, Any], tally: Tally, avoid: list[str | None],
                       last: list[BaseException | None], flaky: list[bool], outer_end: float | None) -> Any:
        """One attempt: a healthy endpoint (another than the one that just failed to connect), one
        request on it; remembers the failure for the retry policy (`last`, `flaky`, `avoid`)."""
        left = time_left()
        if left is not None and left < MIN_ATTEMPT_S:
            outer_left = None if outer_end is None else outer_end - asyncio.get_running_loop().time()
            if last[0] is not None and outer_left is not None and outer_left >= MIN_ATTEMPT_S:
                raise _ShareSpent() from last[0]  # the call's share, not the deadline: the judge failed
            raise DeadlinePassed(f"time budget spent after {tally.attempts} requests")
        endpoint = await self._acquire(avoid[0])
        try:
            return await self._once(endpoint, request, tally)
        except openai.APIConnectionError as exc:  # refused or timed out: try another replica next
            avoid[0], last[0], flaky[0] = endpoint.url, exc, False
            raise
        except (openai.APIStatusError, MalformedReply) as exc:  # it answered, with an error
            last[0] = exc
            flaky[0] = is_server_error(exc) and endpoint.breaker.answering()
            raise

    async def _acquire(self, avoid: str | None) -> Endpoint:
        """`pick`, but while an endpoint's probe is in flight wait for its verdict rather than fail:
        when a judge comes back, the calls queued behind the probe go through instead of failing."""
        while True:
            try:
                return self.pick(avoid)
            except CircuitOpen:
                if not any(b.probing for b in self.breakers.values()):
                    raise
            await asyncio.sleep(PROBE_POLL_S)

    async def _once(self, endpoint: Endpoint, request: dict[str, Any], tally: Tally) -> Any:
        """One HTTP request on an endpoint whose breaker granted it; tells the breaker how it went."""
        breaker = endpoint.breaker
        endpoint.in_flight += 1
        start: float | None = None
        try:
            async with endpoint.semaphore:
                left = time_left()  # the HTTP timeout never outlasts the deadline: the breaker sees it
                if left is not None and left < request["timeout"]:
                    request = {**request, "timeout": max(left, MIN_ATTEMPT_S)}
                tally.attempts += 1
                start = time.monotonic()
                try:
                    response = await _post(endpoint, request)
                finally:
                    tally.latency_s += time.monotonic() - (start or 0.0)
        except openai.APIStatusError as exc:  # the server answered: only a 5xx says it is unwell
            if exc.status_code >= 500:
                breaker.failure(describe(exc))
            else:
                breaker.success()
            raise
        except (openai.APIConnectionError, MalformedReply) as exc:
            breaker.failure(describe(exc), stall=isinstance(exc, openai.APITimeoutError), started=start)
            raise
        except BaseException:  # cancelled by a deadline, or a bug: no evidence either way
            breaker.release()
            raise
        finally:
            endpoint.in_flight -= 1
        breaker.success()
        return response


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """The SDK's default TLS context (same trust store, same checks), built once per process.

    Why: building it reads the whole CA bundle (30-70 ms of CPU here), and a client is made per
    endpoint per event loop (every ``asyncio.run`` of offline scoring); an SSL context is safe to
    share between clients and threads.
    """
    return create_ssl_context()


async def _post(endpoint: Endpoint, request: dict[str, Any]) -> Completion:
    # Our body is already plain JSON: post it as the bytes the SDK would send, images spliced in
    # unescaped (see `jsonbody`), on aiohttp with the SDK's exceptions (`http`).
    body = body_pieces({k: v for k, v in request.items() if k != "timeout"})
    return await endpoint.client.chat(body, request.get("timeout"))


def describe(exc: BaseException | None) -> str:
    """A short, key-free description of a transport error for logs and error messages."""
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code} from {exc.request.url}"
    if isinstance(exc, openai.APITimeoutError):
        return f"timeout from {exc.request.url}"
    if isinstance(exc, openai.APIConnectionError):
        return f"connection error to {exc.request.url}"
    if isinstance(exc, (MalformedReply, CircuitOpen, DeadlinePassed)):
        return str(exc)
    return repr(exc)
