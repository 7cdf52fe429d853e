"""The transport layer: replicas, per-endpoint concurrency, and bounded retries with backoff (the
policy, and the errors that end it, in `ladder`).

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
import functools
import ssl
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import openai

from ..waits import Waits, waited
from .breaker import CircuitBreaker
from .config import JudgeConfig
from .deadline import deadline_at, time_left
from .http import ChatClient, Completion, MalformedReply, httpx, reply_byte_cap
from .jsonbody import body_pieces
from .ladder import CircuitOpen, DeadlinePassed, Ladder, ShareSpent, describe

create_ssl_context = httpx.create_ssl_context  # the SDK's trust settings (see `http`)

#: How often a caller re-checks a half-open endpoint whose probe is in flight.
PROBE_POLL_S = 0.02
#: An attempt with less time than this left before the deadline is not sent.
MIN_ATTEMPT_S = 0.05


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


class EndpointPool:
    """Owns the clients and semaphores of every replica, per running event loop."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self._pools: dict[int, _LoopPool] = {}
        self._lock = threading.Lock()
        self.waits = Waits()  # requests that found every connection (`max_concurrency`) in use
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
        ladder = Ladder(self.config, stage)
        try:
            return await ladder.run(lambda: self._attempt(request, tally, ladder, outer_end))
        except ShareSpent as spent:
            raise spent.__cause__ from None  # type: ignore[misc]

    async def _attempt(self, request: dict[str, Any], tally: Tally, ladder: Ladder, outer_end: float | None) -> Any:
        """One attempt: a healthy endpoint (another than the one that just failed to connect), one
        request on it; tells the ladder how it failed."""
        left = time_left()
        if left is not None and left < MIN_ATTEMPT_S:
            outer_left = None if outer_end is None else outer_end - asyncio.get_running_loop().time()
            if ladder.last is not None and outer_left is not None and outer_left >= MIN_ATTEMPT_S:
                raise ShareSpent() from ladder.last  # the call's share, not the deadline: the judge failed
            raise DeadlinePassed(f"time budget spent after {tally.attempts} requests")
        endpoint = await self._acquire(ladder.avoid)
        try:
            return await self._once(endpoint, request, tally)
        except openai.APIConnectionError as exc:  # refused or timed out: try another replica next
            ladder.refused(endpoint.url, exc)
            raise
        except (openai.APIStatusError, MalformedReply) as exc:  # it answered, with an error
            ladder.answered(exc, endpoint_answers_others=endpoint.breaker.answering())
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
            async with waited(endpoint.semaphore, self.waits):
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
    return await endpoint.client.chat(body, request.get("timeout"),
                                      max_bytes=reply_byte_cap(request.get("max_completion_tokens")))
