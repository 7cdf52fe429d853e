"""Top-k screenshot grouping per criterion (pure code, no judge).

Rules (paper, appendix A.3.1):
- For each criterion keep the k screenshots with the highest relevance (default k=5); ties go to
  the *later* screenshot, which shows the more recent state.
- Pruning: when a criterion has a screenshot scoring above 7, earlier screenshots scoring below 5
  are dropped from its group ("the answer is later; the early noise adds nothing").
- Pairs scoring below `min_relevance` (default 1) are never analysed: a 0 means "irrelevant".

Candidates are the *distinct* screenshots only (the latest number of each content hash): identical
frames are scored and analysed once.

`decided(...)` is the streaming form used by the pipeline: given the relevance rows known so far
and the candidates still pending, it says for one screenshot whether its final criterion set is
already certain, so that screenshot's evidence call can start before the whole matrix is in. Once
nothing is pending it agrees with `select` exactly (tested).
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence

HIGH, LOW = 7, 5  # pruning thresholds: "above 7" and "below 5"

Matrix = Mapping[int, Mapping[str, int]]  # screenshot number -> criterion id -> score 0..10


def _key(matrix: Matrix, shot: int, cid: str) -> tuple[int, int]:
    return (matrix[shot][cid], shot)  # higher score first; on ties the later screenshot first


def select(matrix: Matrix, cid: str, *, k: int = 5, prune: bool = True, min_relevance: int = 1) -> list[int]:
    """The final group for criterion `cid`, best first."""
    ranked = sorted(matrix, key=lambda s: _key(matrix, s, cid), reverse=True)[:k]
    kept = [s for s in ranked if matrix[s][cid] >= min_relevance]
    if prune:
        kept = [s for s in kept if not (matrix[s][cid] < LOW and
                                         any(t > s and matrix[t][cid] > HIGH for t in matrix))]
    return kept


def group(matrix: Matrix, ids: Sequence[str], **kw: int | bool) -> dict[str, list[int]]:
    """Top-k groups for every criterion (criterion id -> screenshot numbers, best first)."""
    return {cid: select(matrix, cid, **kw) for cid in ids}  # type: ignore[arg-type]


def invert(groups: Mapping[str, Sequence[int]], ids: Sequence[str]) -> dict[int, list[str]]:
    """Screenshot number -> the criteria it is evidence for (rubric order), screenshots in time order."""
    out: dict[int, list[str]] = {}
    for cid in ids:
        for shot in groups.get(cid, ()):
            out.setdefault(shot, []).append(cid)
    return dict(sorted(out.items()))


def decide_all(shots: Iterable[int], matrix: Matrix, pending: Iterable[int], ids: Sequence[str], *,
               k: int = 5, prune: bool = True, min_relevance: int = 1) -> dict[int, list[str] | None]:
    """`decided` for many screenshots at once, in O(M N log M) (the pipeline calls it per arriving row)."""
    pending = set(pending) - set(matrix)  # a known row is not pending
    last_pending, n_pending = max(pending, default=0), len(pending)
    ranked = {cid: sorted(_key(matrix, t, cid) for t in matrix) for cid in ids}  # ascending
    last_high = {cid: max((t for t in matrix if matrix[t][cid] > HIGH), default=0) for cid in ids}
    out: dict[int, list[str] | None] = {}
    for shot in shots:
        got: list[str] | None = []
        for cid in ids:
            score = matrix[shot][cid]
            if score < min_relevance:
                continue
            beaters = len(ranked[cid]) - bisect_right(ranked[cid], (score, shot))
            if beaters >= k:
                continue  # already pushed out of the top-k by known rows
            if prune and score < LOW:
                if last_high[cid] > shot:
                    continue  # certainly pruned
                if last_pending > shot:
                    got = None  # a later row could still prune it
                    break
            if beaters + n_pending >= k:
                got = None  # pending rows could still push it out
                break
            got.append(cid)
        out[shot] = got
    return out


def decided(shot: int, matrix: Matrix, pending: Iterable[int], ids: Sequence[str], *, k: int = 5,
            prune: bool = True, min_relevance: int = 1) -> list[str] | None:
    """The criteria `shot` will certainly be grouped under, or None while that is still uncertain.

    `matrix` holds the rows known so far (it must contain `shot`); `pending` the candidates whose
    rows may still arrive (rows that failed for good are simply absent from both).
    """
    return decide_all([shot], matrix, pending, ids, k=k, prune=prune, min_relevance=min_relevance)[shot]


def representatives(hash_groups: Mapping[str, Sequence[int]]) -> dict[int, str]:
    """Candidate screenshot number (latest occurrence) -> content hash, one per distinct image."""
    return {max(nums): h for h, nums in hash_groups.items()}
