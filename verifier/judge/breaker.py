"""A circuit breaker per judge endpoint: fail fast while the judge is down, probe when it may be back.

Why: without one, every logical call to a dead judge pays the whole retry ladder (about 9 s against
a refused port, up to 5 x ``timeout_s`` against one that accepts and never answers), and every
rollout of every reward batch pays it again. With it, ``failures`` consecutive transport failures
of an endpoint *open* its circuit: requests to it are refused at once (the caller gets
`JudgeCircuitOpenError`, the reward `None`). After ``cooldown_s`` the circuit is *half-open*: one
request at a time goes through as a probe (callers meanwhile wait for its answer, see
`EndpointPool`); its success closes the circuit, its failure opens it for another cool-down.

What counts: connection errors, timeouts, 5xx and malformed 200 replies are failures; any other
HTTP answer (including 4xx and 429, which prove the server is up) is a success and resets the
count. A request cancelled before its answer (a deadline) counts as neither. The breaker uses
`time.monotonic` and a thread lock, so one instance serves an endpoint across event loops.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

State = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Closed -> open after `failures` consecutive failures -> half-open after `cooldown_s`."""

    def __init__(self, failures: int, cooldown_s: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.threshold, self.cooldown_s, self._clock = failures, cooldown_s, clock
        self._lock = threading.Lock()
        self._state: State = "closed"
        self._streak = 0
        self._opened_at = 0.0
        self._probing = False
        self.last_failure = ""

    @property
    def state(self) -> State:
        with self._lock:
            return self._current()

    def _current(self) -> State:
        if self._state == "open" and self._clock() - self._opened_at >= self.cooldown_s:
            self._state, self._probing = "half_open", False
        return self._state

    @property
    def probing(self) -> bool:
        """Half-open with its probe in flight: the answer comes soon, wait for it instead of failing."""
        with self._lock:
            return self._current() == "half_open" and self._probing

    def acquire(self) -> bool:
        """May a request be sent now? In the half-open state only one probe is in flight at a time."""
        if self.threshold <= 0:
            return True
        with self._lock:
            state = self._current()
            if state == "closed":
                return True
            if state == "half_open" and not self._probing:
                self._probing = True
                return True
            return False

    def success(self) -> None:
        with self._lock:
            self._state, self._streak, self._probing = "closed", 0, False

    def failure(self, reason: str) -> None:
        if self.threshold <= 0:
            return
        with self._lock:
            self._streak += 1
            self.last_failure = reason
            if self._current() == "half_open" or self._streak >= self.threshold:
                self._state, self._opened_at, self._probing = "open", self._clock(), False

    def release(self) -> None:
        """A granted request ended without an answer (cancelled): let another probe through."""
        with self._lock:
            self._probing = False

    def retry_in(self) -> float:
        """Seconds until the next probe may go (0 when not open)."""
        with self._lock:
            if self._current() != "open":
                return 0.0
            return max(0.0, self.cooldown_s - (self._clock() - self._opened_at))
