"""`StageCache`: an in-memory, single-flight memo shared across `verify()` calls.

Why: a GRPO group scores G rollouts of the *same* task at once. The rubric depends only on the
task, and a relevance row only on (rubric, screenshot bytes), so they are computed once per group:
the first caller starts the computation and every concurrent caller with the same key awaits that
same task ("single flight") instead of issuing a duplicate judge call.

Failures are not cached: a failed computation is forgotten so the next caller retries it. A
computation runs under the time budget of the caller that started it (`verifier.judge.deadline`);
when that budget, not the judge, ends it (`JudgeDeadlineError`), a caller that joined it with time
of its own left starts the computation again instead of inheriting someone else's deadline.
Results are kept per key until `clear()`; `max_entries` bounds memory (oldest evicted first).
Safe across event loops: finished values are plain data; in-flight tasks are per loop. So the
single flight does *not* cross event loops: loops that ask for the same key at the same moment
each compute it (eight loops in one process sent 3-4 rubric requests for one group), and only
later callers on any loop hit the stored value. An asyncio task cannot be awaited from another
loop, and blocking one loop on another's would stall it. To share one computation across loops,
threads or processes (several training ranks), send the rollouts to one `serve-reward` service:
its single event loop holds every in-flight computation (see serving/reward_service).
"""
from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from .errors import JudgeDeadlineError
from .judge.deadline import time_left

T = TypeVar("T")


def key_of(*parts: Any) -> str:
    """A stable hash key from JSON-able parts (pydantic models are dumped first)."""
    norm = [p.model_dump(mode="json") if hasattr(p, "model_dump") else p for p in parts]
    blob = json.dumps(norm, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class StageCache:
    """Single-flight memo: `await cache.get_or_compute(namespace, key, factory)`."""

    def __init__(self, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self._done: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._inflight: dict[tuple[asyncio.AbstractEventLoop, str, str], asyncio.Task] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._done)

    def clear(self) -> None:
        self._done.clear()

    def ready(self, namespace: str, key: str) -> bool:
        """True when a *finished* value is stored: a hit that costs no wait at all.

        `get_or_compute` also reports a hit when it joins another caller's in-flight computation;
        that caller still waits a full judge round, so DAG round accounting must tell them apart.
        """
        return (namespace, key) in self._done

    async def get_or_compute(self, namespace: str, key: str,
                             factory: Callable[[], Coroutine[Any, Any, T]]) -> tuple[T, bool]:
        """Return (value, hit). `hit` is True when no new computation was started by this caller."""
        k = (namespace, key)
        loop = asyncio.get_running_loop()
        fk = (loop, namespace, key)
        while True:
            if k in self._done:
                self.hits += 1
                self._done.move_to_end(k)
                return self._done[k], True
            task = self._inflight.get(fk)
            if task is None:
                break
            try:
                value = await asyncio.shield(task)
            except JudgeDeadlineError:
                left = time_left()
                if left is not None and left <= 0:
                    raise  # our own budget is spent too
                if self._inflight.get(fk) is task:
                    del self._inflight[fk]
                continue  # the starter's deadline ended it, not ours: compute it again
            self.hits += 1
            return value, True
        self.misses += 1
        task = loop.create_task(factory())
        self._inflight[fk] = task

        def finish(t: asyncio.Task) -> None:  # runs even if every awaiting caller was cancelled
            if self._inflight.get(fk) is t:
                del self._inflight[fk]
            if not t.cancelled() and t.exception() is None:
                self._done[k] = t.result()
                while len(self._done) > self.max_entries:
                    self._done.popitem(last=False)
        task.add_done_callback(finish)
        return await asyncio.shield(task), False
