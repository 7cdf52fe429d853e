"""Admission by bytes: the request bodies a service holds at once are bounded, not only counted.

Why: a request's memory is its body (base64 screenshots, up to `--max-body-mb`) and what is
parsed from it, held until its verification ends. Counting requests let 256 queued requests of
up to 64 MB reach many GB; counting their bytes bounds the service's memory whatever their size.

`ByteAdmission` reserves a request's bytes in `ByteBudget` as they arrive, and releases them when
the response has been sent. Reserving the declared length up front let six slow uploads that
announced 64 MB each (and sent a byte every 5 s) hold the whole 384 MB budget, so a 1 kB request got
429 after 30 s (issue 38 §8). Now the first grant (1 MB, or the declared length if smaller) is
reserved before a byte is read, and each further grant brings what the request holds to at most
four times what it has sent (never past its declared length, or the body limit): to hold the
budget a client must send a quarter of it. Why not one megabyte at a time: bodies half read then
held much of the budget while waiting for their next grant, and the benchmark (M = 20, 64 clients)
lost 13% of its throughput; with grants of 4x it is unchanged (453 before, 444 after,
verifications/min, median of 3, back to back on an idle machine; peak RSS 1079 and 1071 MB). A request whose next grant does not fit waits up to `wait_s`
for bytes to free (its body meanwhile stays in its socket buffers), then gets 429 with a
Retry-After. A request larger than the whole budget is admitted alone, when nothing else is in
flight, so no valid request can starve; the earliest admitted request that waits for a grant
may go past the budget, one at a time, so bodies half read never wait on each other (the bound: the
budget plus one body).
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
        self._readers: dict[int, None] = {}  # requests reading their body, in admission order
        self._waiting: set[int] = set()  # readers waiting for a grant
        self._over: int | None = None  # the reader let past the capacity, until it releases

    def _fits(self, n: int, held: int, reader: object | None) -> bool:
        if self.in_flight + n <= self.capacity or self.in_flight == held:
            return True
        if reader is None:
            return False
        if self._over == id(reader):  # the one request past the capacity reads on
            return True
        # The earliest admitted of the readers waiting for a grant (the furthest along, as a rule;
        # never one that only trickles its body) may go past the capacity, one request at a time:
        # from a budget not over, and then until that request has released its bytes.
        return self._over is None and self.in_flight <= self.capacity and self._first_waiting() in (None, id(reader))

    def _first_waiting(self) -> int | None:
        return next((r for r in self._readers if r in self._waiting), None)

    def _take(self, n: int, reader: object | None) -> None:
        self.in_flight += n
        self.high_water = max(self.high_water, self.in_flight)
        if reader is not None and self.in_flight > self.capacity:
            self._over = id(reader)

    async def acquire(self, n: int, *, held: int = 0, reader: object | None = None) -> bool:
        """Reserve `n` more bytes for a request that holds `held` already, waiting up to `wait_s`;
        False when they did not free in time. A request that holds all there is in flight may grow
        past the capacity (it is alone), and so may the earliest admitted `reader` (a request
        reading its body) of those waiting for a grant, one at a time: with bytes reserved as they arrive, bodies half read could otherwise fill the
        budget and wait on each other until all got 429. The bound is the capacity plus one body."""
        if self._fits(n, held, reader):  # the common case, without the condition's lock
            self._take(n, reader)
            return True
        if self._freed is None:
            self._freed = asyncio.Condition()
        async with self._freed:
            if not self._fits(n, held, reader):
                self.waiting += 1
                start = time.monotonic()
                if reader is not None:
                    self._waiting.add(id(reader))
                try:
                    await asyncio.wait_for(self._freed.wait_for(lambda: self._fits(n, held, reader)), self.wait_s)
                except TimeoutError:
                    self.rejected += 1
                    return False
                finally:
                    self.waiting -= 1
                    self.waits.add(time.monotonic() - start)
                    if reader is not None and id(reader) in self._waiting:
                        self._waiting.discard(id(reader))
                        self._freed.notify_all()  # the next reader in line may now go past
            self._take(n, reader)
            return True

    def start_reading(self, reader: object) -> None:
        self._readers[id(reader)] = None

    def done_reading(self, reader: object) -> None:
        self._readers.pop(id(reader), None)

    async def _notify(self) -> None:
        if self._freed is not None:
            async with self._freed:
                self._freed.notify_all()

    async def release(self, n: int, *, owner: object | None = None) -> None:
        if owner is not None and self._over == id(owner):
            self._over = None
        now = time.monotonic()
        dt = max(1e-3, now - self._last_release)
        self._rate = 0.8 * self._rate + 0.2 * (n / dt)
        self._last_release = now
        self.in_flight = max(0, self.in_flight - n)
        await self._notify()

    def retry_after(self, n: int) -> int:
        """Seconds until `n` bytes are likely free, from the recent release rate (1 to 60)."""
        need = self.in_flight + n - self.capacity
        if need <= 0 or self._rate <= 0:
            return 1
        return max(1, min(60, math.ceil(need / self._rate)))


GRANT = 2**20  # bytes reserved at a time as a body arrives


class _NoBytes(Exception):
    """The next grant of a body did not fit within the wait."""


class ByteAdmission:
    """Pure ASGI: POST/PUT/PATCH requests reserve their body's bytes in `budget` as it is read.

    `on_reject(scope, receive, send, retry_after)` answers a request that did not get its bytes."""

    def __init__(self, app: Any, budget: ByteBudget, *, chunked_bytes: int, on_reject: Any) -> None:
        self.app, self.budget, self.chunked_bytes, self.on_reject = app, budget, chunked_bytes, on_reject

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        declared = _declared_length(scope)
        first = min(GRANT, declared if declared is not None else self.chunked_bytes)
        if not await self.budget.acquire(first):
            return await self.on_reject(scope, receive, send, self.budget.retry_after(first))
        held = {"bytes": first, "read": 0, "started": False}
        self.budget.start_reading(held)

        async def reserving_receive() -> dict:
            message = await receive()
            held["read"] += len(message.get("body", b""))
            need = held["read"] - held["bytes"]
            if need > 0:  # what is held becomes 4x what was read, up to the body's (declared or largest) size
                more = max(need, min(3 * held["bytes"], (declared or self.chunked_bytes) - held["bytes"]))
                if not await self.budget.acquire(more, held=held["bytes"], reader=held):
                    raise _NoBytes(more)
                held["bytes"] += more
            return message

        async def watched_send(message: dict) -> None:
            held["started"] = held["started"] or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, reserving_receive, watched_send)
        except _NoBytes as exc:
            if held["started"]:
                raise
            await self.on_reject(scope, receive, send, self.budget.retry_after(exc.args[0]))
        finally:
            self.budget.done_reading(held)
            await self.budget.release(held["bytes"], owner=held)


def _declared_length(scope: dict) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return max(0, int(value))
            except ValueError:
                return None
    return None
