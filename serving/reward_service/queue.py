"""Bounded admission: at most `capacity` trajectories running or waiting, the rest answered 429.

Why admission rather than an asyncio.Queue: the verification itself is already concurrent and
bounded by the session's semaphore; what must stay bounded is the work (and memory: screenshots)
the service accepts. A full service says so at once with a Retry-After estimated from how fast
it has been finishing work, so clients back off instead of piling up connections.
"""
from __future__ import annotations

import math
import time


class AdmissionQueue:
    def __init__(self, capacity: int, *, concurrency: int = 1) -> None:
        self.capacity = capacity
        self.concurrency = max(1, concurrency)
        self.depth = 0
        self.high_water = 0
        self.rejected = 0
        self._service_s = 1.0  # EWMA of one trajectory's time in the service

    def try_admit(self, n: int = 1) -> bool:
        """Admit `n` trajectories together, or none of them."""
        if self.depth + n > self.capacity:
            self.rejected += 1
            return False
        self.depth += n
        self.high_water = max(self.high_water, self.depth)
        return True

    def release(self, n: int = 1, *, started: float | None = None) -> None:
        self.depth = max(0, self.depth - n)
        if started is not None:
            self._service_s = 0.8 * self._service_s + 0.2 * (time.monotonic() - started)

    def retry_after(self) -> int:
        """Whole seconds until a slot is likely free (at least 1)."""
        waves = self.depth / self.concurrency
        return max(1, min(60, math.ceil(self._service_s * max(waves, 1) / 4)))
