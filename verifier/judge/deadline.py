"""A time budget that reaches every judge request made under it (a context variable).

Why: a reward batch or a verification has a deadline, but the judge calls are made deep inside
the pipeline, in tasks the pipeline spawns. Setting the deadline once around ``verify()`` makes
every request it sends use ``min(timeout_s, time left)`` as its HTTP timeout, and no request start
after the deadline. So a judge that never answers is cut *by a timeout*, which its circuit
breaker counts, rather than by a cancellation, which it cannot tell from a call nobody needs.
Asyncio tasks copy the context when they are created, so the budget follows the pipeline's tasks.

Example::

    with deadline_in(30.0):
        result = await verify(trajectory, judge=judge)   # raises JudgeDeadlineError if it runs out
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_DEADLINE: ContextVar[float | None] = ContextVar("cua_judge_deadline", default=None)


@contextmanager
def deadline_at(when: float | None) -> Iterator[None]:
    """Judge calls in this block (and tasks it creates) end by `when` (the running loop's `time()`);
    an enclosing, earlier deadline still wins. None adds no limit."""
    current = _DEADLINE.get()
    if when is not None and current is not None:
        when = min(when, current)
    token = _DEADLINE.set(when if when is not None else current)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@contextmanager
def deadline_in(seconds: float | None) -> Iterator[None]:
    """`deadline_at` ``seconds`` from now (inside a running event loop)."""
    with deadline_at(None if seconds is None else asyncio.get_running_loop().time() + seconds):
        yield


def time_left() -> float | None:
    """Seconds until the current deadline (may be negative); None when there is none."""
    when = _DEADLINE.get()
    return None if when is None else when - asyncio.get_running_loop().time()
