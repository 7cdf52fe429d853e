"""Deterministic sharding of a source: `--shard I/N` keeps the items whose task hashes to I.

Why the task id and not the row id: the G rollouts of one task then land in the same shard (and,
on Ray, on the same actor), so the task's rubric is written once. The hash is sha256, stable across
processes, machines and Python versions (unlike `hash()`). An item that cannot be loaded is keyed
by its own id, so it still lands in exactly one shard, where it becomes an unscored record.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator

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


def keyed(item: Item) -> tuple[Item, str]:
    """(item, group key): the item with its trajectory loaded once, keyed by task id."""
    from ..sources.items import failing

    rid, desc, thunk = item
    try:
        traj = thunk()
    except Exception as exc:  # noqa: BLE001 - recorded as this item's unscored reason later
        return failing(rid, desc, exc), rid
    return (rid, desc, lambda t=traj: t), traj.task.id


def shard_items(items: Iterable[Item], index: int, count: int) -> Iterator[Item]:
    """The items of shard `index` of `count` (every item is in exactly one shard)."""
    for item in items:
        loaded, key = keyed(item)
        if stable_bucket(key, count) == index:
            yield loaded
