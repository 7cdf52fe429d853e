"""Deterministic sharding of a source by task: `--shard I/N` (a hash) and Ray's actors (`Balanced`).

Why the task id and not the row id: the G rollouts of one task then land in the same shard (and,
on Ray, on the same actor), so the task's rubric is written once. An item that cannot be loaded is
keyed by its own id, so it still lands in exactly one shard, where it becomes an unscored record.

Two ways to map tasks to buckets. `--shard I/N` hashes the task id (sha256, stable across
processes, machines and Python versions, unlike `hash()`): separate jobs, possibly on different
days, must agree with nothing but the id. Ray's actors use `Balanced`: a hash of 8 tasks over 2
actors split them 5/3 (25 rows against 15 in the benchmark, so one actor worked 60% longer than
the other). Every actor reads the same rows in the same order, so each can make the same greedy
choice (a task's first row goes to the bucket with the fewest rows so far) without talking to the
others: balanced to within one task's rows, and still one bucket per task.

Why `task_hint`: on Ray every actor reads the whole source and keeps its own shard, so the key of a
row it does not keep must be cheap. A row with inline screenshots takes ~0.1-0.4 s to load (base64
and image checks) but its task id sits in the parsed JSON; the hint reads it there and agrees with
the loaded trajectory's `task.id` whenever that loads (and a row that fails to load fails alone,
on the one actor its hint names).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

from ..errors import ConfigError

Item = tuple  # (id, source description, thunk -> Trajectory), as in verifier.sources.items


def stable_bucket(key: str, n: int) -> int:
    """`key` -> 0..n-1, the same on every machine."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % n


def parse_shard(text: str) -> tuple[int, int]:
    """"I/N" with 0 <= I < N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ConfigError(f"--shard {text!r}: expected I/N, e.g. 0/4") from None
    if n < 1 or not 0 <= i < n:
        raise ConfigError(f"--shard {text!r}: need 0 <= I < N")
    return i, n


def task_hint(thunk: Any) -> str | None:
    """The task id of a not-yet-loaded item, read from its parsed record without loading it; None
    when the item is of another kind (a run folder, a prompt/completion row): then it is loaded."""
    from ..loaders import load_native_record
    from ..sources.rows import row_to_trajectory

    if not isinstance(thunk, partial) or not thunk.args:
        return None
    record = thunk.args[0]
    if thunk.func is load_native_record:
        return _task_id(record)
    if thunk.func is row_to_trajectory and isinstance(record, dict):
        if "web_surfer_log" in record:  # CUAVerifierBench: its task_id column
            task_id = record.get("task_id")
            return task_id if isinstance(task_id, str) and task_id else None
        traj = record.get("trajectory")
        if isinstance(traj, (str, bytes)):
            try:
                traj = json.loads(traj)
            except (ValueError, RecursionError):
                return None
        return _task_id(traj)
    return None


def _task_id(record: Any) -> str | None:
    task = record.get("task") if isinstance(record, dict) else None
    task_id = task.get("id") if isinstance(task, dict) else None
    return task_id if isinstance(task_id, str) and task_id else None


def keyed(item: Item) -> tuple[Item, str]:
    """(item, group key): keyed by task id, from `task_hint` when it has one (the item stays
    unloaded), else by loading the trajectory once (the item then carries it)."""
    from ..sources.items import failing

    rid, desc, thunk = item
    if (hint := task_hint(thunk)) is not None:
        return item, hint
    try:
        traj = thunk()
    except Exception as exc:  # noqa: BLE001 - recorded as this item's unscored reason later
        return failing(rid, desc, exc), rid
    return (rid, desc, lambda t=traj: t), traj.task.id


class Balanced:
    """Task -> bucket in 0..count-1, decided at a task's first row: the bucket with the fewest rows
    so far (the lowest index on a tie). Deterministic given the rows' order: feed it every row
    that is to be scored in this run, in the source's order, whichever bucket keeps it.

    What it counts must be the same for every actor of a run, a replacement included: rows already
    in the result log (resume) are left out by all of them; rows finished earlier in this run are
    counted (a replacement skips them after asking), so its buckets equal its predecessor's."""

    def __init__(self, count: int) -> None:
        self.rows = [0] * count
        self._of: dict[str, int] = {}  # task ids only

    def __call__(self, key: str) -> int:
        """The bucket of this row's task (`key`); counts the row."""
        bucket = self._of.get(key)
        if bucket is None:
            bucket = self._of[key] = min(range(len(self.rows)), key=self.rows.__getitem__)
        self.rows[bucket] += 1
        return bucket


def shard_items(items: Iterable[Item], index: int, count: int) -> Iterator[Item]:
    """The items of shard `index` of `count` (every item is in exactly one shard)."""
    for item in items:
        loaded, key = keyed(item)
        if stable_bucket(key, count) == index:
            yield loaded
