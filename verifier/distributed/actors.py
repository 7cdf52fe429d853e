"""The Ray side of `score-dataset --ray`: actors that read the source themselves and score their shard.

Why the actors read: a row with inline screenshots is tens of MB. When the driver read rows and
passed them to actors, it parsed and pickled every byte (its RSS grew to GBs with the row count
in flight). Here each actor opens the source on its own node, walks every row in the same order,
and keeps the rows of the tasks in its bucket (`shard.Balanced`: each actor makes the same
choice from the same order, a task's rollouts all land on one actor, so its rubric is written
once, in that actor's stage cache, and the actors get about as many rows each). What crosses to the
driver are ids and finished records; what the driver sends is the source's name, ids to skip
and the options. The cost is that each of N actors reads every row: cheap, since a row it does
not keep is parsed for its task id only (`shard.task_hint`), never loaded.

`ShardReader.run` is an async generator (a Ray streaming generator): it yields `("start", (id, description))`
when it takes a row and `("done", record JSON)` when the row is finished, so the driver always
knows which rows an actor holds, and can give exactly those to its replacement if it dies.
"""
from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import AsyncIterator, Collection, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from ..sources.items import Item, Unscored, score_one
from .memory import actor_settings, bound_heap
from .shard import Balanced, keyed, stable_bucket


@dataclass(frozen=True)
class SourceSpec:
    """What an actor needs to open SOURCE exactly as `score-dataset` does (small: no rows)."""

    source: str  # as the user gave it (row descriptions, hub names)
    path: str  # where to open it: the driver's absolute path of a local file or folder, else `source`
    split: str = "train"
    name: str | None = None
    streaming: bool = False
    id_column: str | None = None
    limit: int | None = None
    task_options: dict[str, Any] = field(default_factory=dict)
    answer_tools: tuple[str, ...] | None = None
    outside: bool = False
    shard: tuple[int, int] | None = None  # --shard I/N, applied before the actor buckets

    def items(self) -> Iterator[Item]:
        """Every item of the source in its fixed order (the order decides `row-i` ids and --limit)."""
        from ..options import single_run
        from ..sources.rows import is_run_source, iter_folder, iter_rows, load_rows

        path = Path(self.path)
        if is_run_source(path):
            items: Iterator[Item] = iter(single_run(iter_folder(path, self.outside, self.task_options),
                                                    self.task_options))
        else:  # a local data file streams (no cache copy per actor); a hub dataset as asked
            ds = load_rows(self.path, split=self.split, name=self.name, streaming=self.streaming or path.is_file())
            items = iter_rows(ds, self.source, self.id_column, self.answer_tools, self.outside)
        return islice(items, self.limit) if self.limit else items


def actor_logging(level: int = logging.WARNING) -> None:
    """Warnings and errors of the project's loggers to this process's stderr, formatted.

    Why: a Ray worker configures no handler for them, so Python's last-resort handler printed the
    bare message (no level, no logger name), or nothing below WARNING. With `log_to_driver` the
    driver prints this stderr under the actor's name, so an actor's failure is seen where the user
    looks (`ray_backend.ray_init_kwargs`). A process whose root logger already has a handler
    (Ray's own logging config, a test) keeps it and gets no second one."""
    if logging.getLogger().handlers:
        return
    for name in ("verifier", "reward", "serving"):
        logger = logging.getLogger(name)
        if not any(getattr(h, "_cua_actor", False) for h in logger.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
            handler._cua_actor = True  # type: ignore[attr-defined]
            logger.addHandler(handler)
            logger.setLevel(min(logger.getEffectiveLevel(), level))


class ShardReader:
    """One stage cache and judge client; scores the rows of bucket `index` of `count`, many at once."""

    def __init__(self, settings: Any) -> None:
        from ..session import VerifierSession

        actor_logging()
        bound_heap()  # this process is the actor's own (see `memory`)
        self.session = VerifierSession(actor_settings(settings))

    async def run(self, spec: SourceSpec, index: int, count: int, skip: Collection[str],
                  also_skip: Collection[str] = (), inflight: int = 16) -> AsyncIterator[tuple[str, Any]]:
        """Yield ("start", (id, description)), ("done", record JSON) per row of this bucket, and once
        ("read", rows of the source already in `skip`) when the whole source has been read.

        `skip`: ids in the result log (resume); `also_skip`: ids the driver finished in this run
        (a replacement actor must not redo them). Both are ids only."""
        events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        # rows held at once: what the session verifies at once, and one read ahead (a held row with
        # inline screenshots is tens of MB: reading further ahead only costs memory)
        slots = asyncio.Semaphore(max(1, min(inflight, self.session.settings.max_concurrency + 1)))
        tasks: set[asyncio.Task[None]] = set()
        none_if_degraded = self.session.settings.none_if_degraded

        async def verify_one(traj: Any) -> Any:
            outcome = await self.session.verify(traj)
            if outcome.error is not None:
                raise Unscored(outcome.error)
            return outcome.result

        async def score(rid: str, desc: str, load: Any) -> None:
            try:
                record = await score_one(rid, desc, load, verify_one, none_if_degraded)
                events.put_nowait(("done", record.to_json_line()))
            finally:
                slots.release()

        async def read() -> None:
            it, seen, skipped = await asyncio.to_thread(spec.items), set[str](), 0  # may open a hub dataset
            assign = Balanced(count)
            while True:
                await slots.acquire()
                item, passed = await asyncio.to_thread(_next_owned, it, index, assign, spec.shard, skip,
                                                       also_skip, seen)
                skipped += passed
                if item is None:
                    slots.release()
                    break
                rid, desc, thunk = item
                events.put_nowait(("start", (rid, desc)))
                task = asyncio.create_task(score(rid, desc, _load_once(thunk)))
                del item, thunk  # the row's parsed record is held by its loader only, until it loads
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            events.put_nowait(("read", skipped))

        reader = asyncio.create_task(read())
        try:
            while True:
                if reader.done() and reader.exception() is not None:
                    raise reader.exception()  # type: ignore[misc]  # e.g. a ConfigError: a bad source
                if reader.done() and not tasks and events.empty():
                    return
                getter = asyncio.ensure_future(events.get())
                await asyncio.wait({getter, *tasks, *([] if reader.done() else [reader])},
                                   return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                else:
                    getter.cancel()
        finally:
            reader.cancel()
            for task in tasks:
                task.cancel()

    def pid(self) -> int:
        return os.getpid()


def _load_once(thunk: Any) -> Any:
    """`thunk` callable once, then let go: the parsed record it holds (the screenshots' base64 text)
    is freed as soon as the trajectory is built, instead of staying beside it while it is verified
    (the judge client replaces a screenshot's text by its own copy, so both would be held)."""
    held = [thunk]

    def load() -> Any:
        return held.pop()()

    return load


def _next_owned(it: Iterator[Item], index: int, assign: Balanced, shard: tuple[int, int] | None,
                skip: Collection[str], also_skip: Collection[str], seen: set[str]) -> tuple[Item | None, int]:
    """(the next item of bucket `index` not yet done, rows passed that were in `skip`); blocking.

    Every row to be scored in this run goes through `assign`, `also_skip` ones included, so a
    replacement actor's buckets are its predecessor's (see `Balanced`)."""
    skipped = 0
    for item in it:
        rid = item[0]
        if rid in seen or rid in skip:  # scored before, or an id met twice in this source
            skipped += 1
            continue
        seen.add(rid)
        loaded, key = keyed(item)
        if shard is not None and stable_bucket(key, shard[1]) != shard[0]:
            continue
        if assign(key) == index and rid not in also_skip:
            return loaded, skipped
    return None, skipped
