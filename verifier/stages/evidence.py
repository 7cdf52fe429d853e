"""Stage 4: evidence analysis, one call per analysed screenshot covering all its criteria.

The message is the shared prefix (task, rubric, action history, final answer) followed by the
criterion subset and the image LAST, so all S calls of a trajectory share one cached prefix.
The judge describes pixels and compares them with the agent's claims; it assigns no points.
`render(...)` turns the collected evidence into the time-ordered, fenced text block later stages
read (they also see the final screenshots themselves).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..budget import SplitNeeded, halves
from ..narrowing import for_call
from ..rendering import fence, image_part
from ..schemas import EvidenceBatch, EvidenceItem, Rubric
from .base import Run

STAGE = "evidence"


@dataclass(frozen=True)
class Evidence:
    """One analysis: the screenshot numbers it covers (identical frames) and the judge's item."""

    screenshots: tuple[int, ...]
    item: EvidenceItem


def per_call_text(r: Run, number: int, cids: Sequence[str]) -> str:
    assert r.rubric is not None
    lines = [f"Analyse Screenshot {number} (shown below) for these criteria:"]
    for cid in cids:
        c = r.rubric.get(cid)
        cond = f" [conditional: applies only if {c.condition}; give condition]" if c.condition else ""
        lines.append(f"- {cid}: {c.name}{cond}")
    return "\n".join(lines)


async def analyse(r: Run, number: int, cids: Sequence[str], same_as: Sequence[int], depth: int) -> list[Evidence]:
    """Analyse screenshot `number` for `cids`; `same_as` lists identical screenshots.

    A call too long for the judge's context splits its criteria in two (budget step 5: each half
    asks for a smaller reply); one criterion that still does not fit raises `ContextOverflowError`."""
    model = for_call(EvidenceBatch, tuple(cids))
    try:
        reply = await r.ask(STAGE, "evidence.system.j2", model, depth=depth,
                            per_call=per_call_text(r, number, cids),
                            images=[image_part(r.traj, number, same_as)], splittable=len(cids) > 1)
    except SplitNeeded:
        r.record_trim(STAGE, ["split_batch"])
        found: list[Evidence] = []
        for half in halves(cids):
            found.extend(await analyse(r, number, half, same_as, depth))
        return found
    shots = tuple(sorted({number, *same_as}))
    return [Evidence(shots, item) for item in reply.items]


def by_criterion(found: Sequence[Evidence]) -> dict[str, list[Evidence]]:
    """criterion id -> its evidence in time order (latest last)."""
    out: dict[str, list[Evidence]] = {}
    for ev in sorted(found, key=lambda e: max(e.screenshots)):
        out.setdefault(ev.item.criterion_id, []).append(ev)
    return out


def render(rubric: Rubric, evidence: dict[str, list[Evidence]], cids: Sequence[str] | None = None, *,
           lean: bool = False) -> str:
    """Fenced text of the evidence per criterion, in time order (stable bytes for prefix caching).

    `lean` (budget step 3): a screenshot's description is given under the first criterion it
    was analysed for and referred to under the others (the claims check and discrepancies,
    which are per criterion, stay)."""
    blocks = []
    seen: dict[tuple[int, ...], str] = {}
    for c in rubric.criteria:
        if cids is not None and c.id not in cids:
            continue
        items = evidence.get(c.id, [])
        if not items:
            blocks.append(f"[{c.id}] no screenshot evidence")
            continue
        lines = [f"[{c.id}] {c.name}"]
        for ev in items:
            i = ev.item
            nums = ", ".join(map(str, ev.screenshots))
            shows = i.visible
            first = seen.setdefault(ev.screenshots, c.id)
            if lean and first != c.id:
                shows = f"(as described under [{first}])"
            line = f"  Screenshot {nums}: shows: {shows} | claims vs pixels: {i.claims_check}"
            if i.discrepancies:
                line += f" | discrepancies: {i.discrepancies}"
            if i.blocker_visible:
                line += " | BLOCKER VISIBLE"
            if i.condition is not None:
                line += f" | condition: {i.condition.value}"
            lines.append(line)
        blocks.append("\n".join(lines))
    return "## Screenshot evidence (written by an analyst from the pixels)\n" + fence("\n".join(blocks), "evidence")
