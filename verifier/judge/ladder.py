"""The transport's retry policy: which failures are retried, how long to wait, and how far to go.

Why its own module: the policy is the part of a judge call that decides, and it was threaded
through `endpoints.EndpointPool._send` as closures over one-element lists. `Ladder` holds what one
call learns across its attempts (the last failure, whether the judge answers others, the endpoint
to avoid) and answers the policy's questions from it; the pool only sends.

The ladder: ``transport_retries`` more attempts after the first, paced by exponential backoff
(``backoff_initial_s`` doubling, capped at ``backoff_max_s``, plus jitter), or by the server's own
``Retry-After`` (capped at ``retry_after_max_s``); a judge that answers others but failed this
request (a 5xx or a malformed 200 while its breaker says it is up) earns ``flaky_retries`` attempts
paced at the ladder's last step; no wait outlasts the deadline.
"""
from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import openai
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from .config import JudgeConfig
from .deadline import time_left
from .http import MalformedReply

log = logging.getLogger("cua_verifier.judge")

_RETRYABLE_STATUS = {408, 409, 429}


class CircuitOpen(Exception):
    """No endpoint may be asked now: every circuit breaker is open (see `breaker`)."""

    def __init__(self, message: str, retry_in_s: float = 0.0) -> None:
        super().__init__(message)
        self.retry_in_s = retry_in_s  # until the first endpoint's probe may go


class ShareSpent(Exception):
    """One call's share of the deadline ran out after failed attempts; raised from the last failure
    (not transient: it ends the retries, and the pool re-raises that failure)."""


class DeadlinePassed(Exception):
    """The time budget of the enclosing `deadline` ran out before this attempt could start."""


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


@dataclass
class Ladder:
    """One judge call's retry state and policy (see the module docstring)."""

    config: JudgeConfig
    stage: str
    avoid: str | None = None  # the endpoint that just failed to connect: the next attempt goes elsewhere
    last: BaseException | None = None  # the last failure, re-raised when the call's share is spent
    flaky: bool = False  # the last failure was an error answer from an endpoint that answers others

    def refused(self, endpoint: str, exc: BaseException) -> None:
        """A connection to `endpoint` failed or timed out: try another replica next."""
        self.avoid, self.last, self.flaky = endpoint, exc, False

    def answered(self, exc: BaseException, *, endpoint_answers_others: bool) -> None:
        """The endpoint answered with an error (`exc`)."""
        self.last, self.flaky = exc, is_server_error(exc) and endpoint_answers_others

    def limit(self) -> int:
        """Attempts in all, the first included."""
        cfg = self.config
        return max(cfg.transport_retries, cfg.flaky_retries if self.flaky else 0) + 1

    def delay_after(self, attempt: int, exc: BaseException | None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        cfg, asked = self.config, retry_after_s(exc)
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

    def warn(self, attempt: int, exc: BaseException | None, delay: float) -> None:
        log.warning("judge transport error (stage=%s, attempt %d/%d): %s; retrying in %.2fs",
                    self.stage, attempt, self.limit(), describe(exc), delay)

    async def run(self, attempt: Callable[[], Awaitable[Any]]) -> Any:
        """`attempt()` until it succeeds, fails for good, or the ladder ends; re-raises the last error.

        The first attempt runs without the retry machinery: nearly every call succeeds on it, and
        setting up tenacity's loop costs ~80 us of CPU per call (~50 calls per verification). From
        the second attempt on, tenacity runs the same policy, its attempt numbers shifted by the
        one made here."""
        try:
            return await attempt()
        except BaseException as exc:
            if not is_transient(exc) or self.limit() <= 1:
                raise
            first = exc
        delay = self.delay_after(1, first)
        self.warn(1, first, delay)
        await asyncio.sleep(delay)
        retrying = AsyncRetrying(
            stop=lambda state: state.attempt_number + 1 >= self.limit(),
            wait=lambda state: self.delay_after(state.attempt_number + 1, _failure(state)),
            retry=retry_if_exception(is_transient),
            before_sleep=self._before_sleep,
            reraise=True)
        response = None
        async for retry in retrying:  # CircuitOpen is not transient: it ends the loop at once
            with retry:
                response = await attempt()
        return response

    def _before_sleep(self, state: RetryCallState) -> None:
        self.warn(state.attempt_number + 1, _failure(state), state.next_action.sleep if state.next_action else 0.0)


def _failure(state: RetryCallState) -> BaseException | None:
    return state.outcome.exception() if state.outcome else None
