"""Stage 2: the relevance matrix, one call per distinct screenshot (or per batch of them).

Each call shows the task, the rubric and the screenshot(s) - no action history: relevance is a
property of (task, rubric, pixels), which is what lets the `StageCache` reuse a row across every
rollout of a GRPO group that passes through the same page. The task is in the key because it is in
the request: two tasks with the same rubric would otherwise share a row asked with whichever task's
text came first, so a rollout's row (and an experiment's requests) would depend on timing. Identical screenshots (same content hash) are
scored once and the row is copied to every screenshot number sharing the hash. With
`relevance_batch_size > 1` the memo key is the batch's tuple of hashes, so sharing across rollouts
only happens for identical batches; batch size 1 (the default) shares per image.
A failed row is never cached (every waiting rollout gets the error and degrades on its own), so
there is no cached degradation to replay here, unlike the rubric.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..cache import key_of
from ..narrowing import for_call
from ..rendering import image_part
from ..schemas import RelevanceBatch
from .base import Run
from .rubric import judge_identity

STAGE = "relevance"
Row = dict[str, int]


def per_call_text(numbers: Sequence[int]) -> str:
    which = ", ".join(f"Screenshot {n}" for n in numbers)
    return (f"Rate {which} (shown below) against every criterion of the rubric, "
            f"one row per screenshot, one score per criterion id.")


async def _score(r: Run, numbers: tuple[int, ...], depth: int) -> dict[int, Row]:
    assert r.rubric is not None
    model = for_call(RelevanceBatch, r.rubric.ids(), numbers)
    reply = await r.ask(STAGE, "relevance.system.j2", model, depth=depth,
                        shared=r.shared_bare(),
                        per_call=per_call_text(numbers),
                        images=[image_part(r.traj, n, coarse=True) for n in numbers])
    return {row.screenshot: {s.criterion_id: s.score for s in row.scores} for row in reply.rows}


async def score(r: Run, numbers: tuple[int, ...], hashes: tuple[str, ...],
                depth: int) -> tuple[dict[int, Row], bool]:
    """(rows for `numbers`, free), memoised per (task, rubric, image hashes, judge model).

    `free` is True only for a row that was already finished in the cache (it costs this rollout no
    round); a row awaited from another rollout's in-flight call is a cache hit but still a round.
    """
    assert r.rubric is not None
    task = r.traj.task
    key = key_of(task.instruction, task.start_url, r.rubric, hashes, judge_identity(r.judge))
    free = r.cache.ready(STAGE, key)
    rows, hit = await r.cache.get_or_compute(STAGE, key, lambda: _by_hash(r, numbers, hashes, depth))
    if hit:
        r.ledger.hit(STAGE)
    return {n: rows[h] for n, h in zip(numbers, hashes)}, free


async def _by_hash(r: Run, numbers: tuple[int, ...], hashes: tuple[str, ...], depth: int) -> dict[str, Row]:
    rows = await _score(r, numbers, depth)
    return {h: rows[n] for n, h in zip(numbers, hashes)}


def full_matrix(known: dict[int, dict[str, int]], hash_groups: dict[str, list[int]], ids: tuple[str, ...],
                m: int) -> list[list[int] | None]:
    """Full M x N matrix: identical screenshots share their representative's row."""
    rows: list[list[int] | None] = [None] * m
    for nums in hash_groups.values():
        row = known.get(max(nums))
        for n in nums:
            rows[n - 1] = [row[c] for c in ids] if row is not None else None
    return rows
