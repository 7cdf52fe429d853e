"""Admission by bytes: the request bodies a service holds at once are bounded, not only counted.

Why: a request's memory is its body (base64 screenshots, up to `--max-body-mb`) and what is
parsed from it, held until its verification ends. Counting requests let 256 queued requests of
up to 64 MB reach many GB; counting their bytes bounds the service's memory whatever their size.

`ByteBudget` reserves a request's Content-Length (a chunked body: the body limit) *before* a byte
of the body is read and releases it when the response has been sent. A request that does not fit
waits up to `wait_s` for bytes to free (the client's body meanwhile stays in its socket buffers),
then gets 429 with a Retry-After. A request larger than the whole budget is admitted alone, when
nothing else is in flight, so no valid request can starve.
"""
from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from verifier.waits import Waits


class ByteBudget:
    def __init__(self, capacity: int, *, wait_s: float = 30.0) -> None:
        self.capacity, self.wait_s = capacity, wait_s
        self.in_flight = 0
        self.high_water = 0
        self.waiting = 0
        self.rejected = 0
        self.waits = Waits()  # requests that found the budget full (a 429 after `wait_s` included)
        self._freed: asyncio.Condition | None = None
        self._rate = 0.0  # EWMA of bytes released per second, for Retry-After

        self._last_release = time.monotonic()

    def _fits(self, n: int) -> bool:
        return self.in_flight + n <= self.capacity or self.in_flight == 0

    async def acquire(self, n: int) -> bool:
        """Reserve `n` bytes, waiting up to `wait_s`; False when they did not free in time."""
        if self._freed is None:
            self._freed = asyncio.Condition()
        async with self._freed:
            if not self._fits(n):
                self.waiting += 1
                start = time.monotonic()
                try:
                    await asyncio.wait_for(self._freed.wait_for(lambda: self._fits(n)), self.wait_s)
                except TimeoutError:
                    self.rejected += 1
                    return False
                finally:
                    self.waiting -= 1
                    self.waits.add(time.monotonic() - start)
            self.in_flight += n
            self.high_water = max(self.high_water, self.in_flight)
            return True

    async def release(self, n: int) -> None:
        now = time.monotonic()
        dt = max(1e-3, now - self._last_release)
        self._rate = 0.8 * self._rate + 0.2 * (n / dt)
        self._last_release = now
        self.in_flight = max(0, self.in_flight - n)
        if self._freed is not None:
            async with self._freed:
                self._freed.notify_all()

    def retry_after(self, n: int) -> int:
        """Seconds until `n` bytes are likely free, from the recent release rate (1 to 60)."""
        need = self.in_flight + n - self.capacity
        if need <= 0 or self._rate <= 0:
            return 1
        return max(1, min(60, math.ceil(need / self._rate)))


class ByteAdmission:
    """Pure ASGI: POST/PUT/PATCH requests reserve their body's bytes in `budget` before it is read.

    `on_reject(scope, receive, send, retry_after)` answers a request that did not get its bytes."""

    def __init__(self, app: Any, budget: ByteBudget, *, chunked_bytes: int, on_reject: Any) -> None:
        self.app, self.budget, self.chunked_bytes, self.on_reject = app, budget, chunked_bytes, on_reject

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        n = _declared_length(scope) or self.chunked_bytes
        if not await self.budget.acquire(n):
            return await self.on_reject(scope, receive, send, self.budget.retry_after(n))
        try:
            await self.app(scope, receive, send)
        finally:
            await self.budget.release(n)


def _declared_length(scope: dict) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return max(0, int(value))
            except ValueError:
                return None
    return None
