"""Time spent waiting at a bound: how often work found a limit full, and for how long in all.

Why: a reward service's throughput is set by whichever of its bounds fills first: the rollouts
it verifies at once (`max_concurrency`), the judge calls it keeps in flight (the judge's
`max_concurrency`), the request bytes it holds (`--max-inflight-mb`), or its CPU. Only the CPU is
visible from outside. A second replica helps only the last case; raising a setting is the cure
for the others, and costs no second copy of the service's caches. Each bound counts its own
waits, and the service exports them (`cua_reward_wait_seconds_total{bound=...}`), so an operator
reads which limit a load met instead of guessing.

Counting costs nothing while a bound is free: the clock is read only when an acquire would block.
"""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Waits:
    """Waits at one bound, summed over the process's event loops (hence the lock)."""

    count: int = 0
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, seconds: float) -> None:
        with self._lock:
            self.count += 1
            self.seconds += max(0.0, seconds)

    @staticmethod
    def total(parts: list[Waits]) -> Waits:
        return Waits(count=sum(w.count for w in parts), seconds=sum(w.seconds for w in parts))


class waited:
    """``async with waited(semaphore, waits):`` acquires `semaphore`, adding to `waits` the time it
    had to wait (nothing when it was free)."""

    __slots__ = ("semaphore", "waits")

    def __init__(self, semaphore: asyncio.Semaphore, waits: Waits) -> None:
        self.semaphore, self.waits = semaphore, waits

    async def __aenter__(self) -> None:
        if not self.semaphore.locked():
            await self.semaphore.acquire()
            return
        start = time.monotonic()
        try:
            await self.semaphore.acquire()
        finally:  # a wait cut short (a deadline cancelled it) counts too: overload shows most there
            self.waits.add(time.monotonic() - start)

    async def __aexit__(self, *exc: object) -> None:
        self.semaphore.release()
