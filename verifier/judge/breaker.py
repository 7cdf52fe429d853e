"""A circuit breaker per judge endpoint: fail fast while the judge is down, probe when it may be back.

Why: without one, every logical call to a dead judge pays the whole retry ladder (about 9 s against
a refused port, up to 5 x ``timeout_s`` against one that accepts and never answers), and every
rollout of every reward batch pays it again.

Down, not flaky: a judge that answers 60% of requests with a 500 is up, and retries recover most of
its calls; opening the circuit on it turns a few lost calls into every call lost. So the breaker
does not open on a run of failures but on the *share* of failures among the endpoint's last
``window`` requests, once at least ``min_calls`` of them are known: only when (nearly) every
recent request failed (``ratio``, 0.95 by default) is the judge down. A flaky judge's successes keep
the share under it. The one exception is a *stall* (a request that timed out): ``stalls`` of them
in a row, with no answer between, open the circuit at once, because each one costs a whole
timeout and a hung judge sends no refusals to count quickly. Stalls that overlap in time count
once: a burst of concurrent requests that time out together is one observation of a slow moment,
not several of a dead judge (a judge that is dead stalls the next round too).

While open, requests are refused at once (the caller gets `JudgeCircuitOpenError`, the reward
`None`). After ``cooldown_s`` the circuit is *half-open*: one request at a time goes through as a
probe (callers meanwhile wait for its answer, see `EndpointPool`); its success closes the circuit
(and forgets the window), its failure opens it for another cool-down.

What counts: connection errors, timeouts, 5xx and malformed 200 replies are failures; any other
HTTP answer (including 4xx and 429, which prove the server is up) is a success. A request cancelled
before its answer (a deadline) counts as neither. The breaker uses `time.monotonic` and a thread
lock, so one instance serves an endpoint across event loops.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Literal

State = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Closed -> open when the judge looks down -> half-open after `cooldown_s` -> closed on a probe's
    success. `min_calls` <= 0 disables it."""

    def __init__(self, min_calls: int, cooldown_s: float, *, window: int = 40, ratio: float = 0.95,
                 stalls: int = 3, clock: Callable[[], float] = time.monotonic) -> None:
        self.threshold, self.cooldown_s, self._clock = min_calls, cooldown_s, clock
        self.ratio, self.stall_limit = ratio, stalls
        self._lock = threading.Lock()
        self._state: State = "closed"
        self._recent: deque[bool] = deque(maxlen=max(window, min_calls, 1))  # True: a failure
        self._streak = 0  # failures in a row (for logs and tests)
        self._stalls = 0  # timeouts in a row (overlapping ones counted once)
        self._last_stall_end = float("-inf")
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

    def failure_share(self) -> float:
        """Share of failures among the requests in the window (0 when it is empty)."""
        with self._lock:
            return sum(self._recent) / len(self._recent) if self._recent else 0.0

    def answering(self) -> bool:
        """Did any request in the window succeed? Then failures are flakiness, not an outage."""
        with self._lock:
            return not all(self._recent)

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
            if self._current() == "half_open":
                self._recent.clear()  # the judge is back: judge it on what comes next
            self._state, self._streak, self._stalls, self._probing = "closed", 0, 0, False
            self._last_stall_end = float("-inf")
            self._recent.append(False)

    def failure(self, reason: str, *, stall: bool = False, started: float | None = None) -> None:
        """A failed request; `stall`: it timed out (no answer at all), having been sent at `started`
        (this breaker's clock; None: counts as a stall of its own)."""
        if self.threshold <= 0:
            return
        with self._lock:
            self._streak += 1
            if not stall:
                self._stalls = 0
            elif started is None or started >= self._last_stall_end:  # not overlapping the last one
                self._stalls += 1
                self._last_stall_end = self._clock()
            self.last_failure = reason
            self._recent.append(True)
            if self._current() == "half_open" or self._looks_down():
                self._state, self._opened_at, self._probing = "open", self._clock(), False

    def _looks_down(self) -> bool:
        if self.stall_limit > 0 and self._stalls >= self.stall_limit:
            return True
        n = len(self._recent)
        return n >= self.threshold and sum(self._recent) >= self.ratio * n

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
