"""Stage 7: screenshot-grounded rescoring of the applicable criteria (V independent runs).

Unlike the reference, this call sees the final screenshot(s) themselves, not only text about
them. It writes no reality note: the notes come from their own call (`stages.reality`), which never
sees the agent's claims, running beside this one. Earned points are half points. Unmet conditional
criteria are not asked at all: they leave both sums. Earned
points are clamped to [0, max] in code. With V runs the process score is the (lower) median
over runs and the median run's justifications become the result's table, or, with
`rescoring_median="criterion"`, each criterion takes its own median (`per_criterion_median`).

A score that used a criterion's full-credit clause (`credit_basis="reality_note"`) earns 0 for that
criterion unless the reality call's note reports the absence and cites a screenshot shown in the
calls (`shown_numbers`: the final screenshots attached and those the evidence text describes) whose
own evidence analysis reports it too (`guards.reality_overrules`, recorded in `result.overruled`).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..guards import reality_overrules
from ..judge.base import ImagePart
from ..narrowing import for_call
from ..rendering import fence, image_part
from ..schemas import RealityCheck, Rescoring, Rubric
from ..scoring import CriterionPoints, clamp, median_index, rubric_score
from .base import Run

STAGE = "rescoring"
#: One of V runs failed while others survived: the score is still screenshot-based (a weaker
#: median), unlike `STAGE` in `degraded`, which means no run survived (action-only fallback).
RUN = "rescoring_run"


def _final(r: Run, hash_groups: dict[str, list[int]]) -> list[tuple[int, list[int]]]:
    """(number shown, identical screenshots) of the last `config.final_screenshots` distinct ones."""
    if r.cfg.final_screenshots == 0 or not r.traj.screenshots:
        return []
    latest = sorted(((max(nums), h) for h, nums in hash_groups.items()), reverse=True)[: r.cfg.final_screenshots]
    return [(n, [m for m in hash_groups[h] if m != n]) for n, h in sorted(latest)]


def final_images(r: Run, hash_groups: dict[str, list[int]]) -> list[ImagePart]:
    """The last `config.final_screenshots` distinct screenshots, in time order."""
    return [image_part(r.traj, n, same) for n, same in _final(r, hash_groups)]


def shown_numbers(r: Run, hash_groups: dict[str, list[int]], evidence_numbers: Sequence[int]) -> set[int]:
    """Screenshots shown to the rescoring and side-effect calls: the final ones attached (with their
    identical copies) and those whose analysis the evidence text carries (`evidence_numbers`)."""
    return {k for n, same in _final(r, hash_groups) for k in (n, *same)} | set(evidence_numbers)


def per_call_text(rubric: Rubric, applicable: Sequence[str], not_applicable: Sequence[str],
                  action_text: str, evidence_text: str, n_images: int) -> str:
    lines = [action_text, "", evidence_text, ""]
    if not_applicable:
        lines.append("Conditional criteria that do NOT apply to this attempt (do not score): "
                     + ", ".join(not_applicable))
    lines.append("Score these criteria: " + ", ".join(applicable) + ".")
    if n_images:
        lines.append(f"The final {n_images} distinct screenshot(s) follow.")
    return "\n".join(lines)


async def run_once(r: Run, applicable: tuple[str, ...], per_call: str, images: list[ImagePart],
                   depth: int, vote: int) -> Rescoring:
    model = for_call(Rescoring, applicable)
    return await r.ask(STAGE, "rescoring.system.j2", model, depth=depth, per_call=per_call,
                       images=images, sampling=r.vote_sampling(vote), images_droppable=True)


def points(rubric: Rubric, applies: dict[str, bool], earned: dict[str, float]) -> list[CriterionPoints]:
    return [CriterionPoints(max_points=c.max_points, earned=earned.get(c.id, 0.0), applies=applies[c.id])
            for c in rubric.criteria]


def score_of(rubric: Rubric, applies: dict[str, bool], reply: Rescoring, notes: RealityCheck | None = None,
             shown: set[int] | None = None,
             absent: dict[str, set[int]] | None = None) -> tuple[float, dict[str, float], list[str]]:
    """(eq.-1 score, clamped earned per criterion, overrules recorded) of one rescoring run.

    With `shown` (the screenshots the calls saw), the reality call's `notes` (None: it failed) and
    `absent` (per criterion, the screenshots whose evidence reports an absence), full-credit-clause
    credit is checked (`guards.reality_overrules`): an overruled criterion earns 0."""
    over, records = reality_overrules(reply, notes, shown, absent) if shown is not None else (set(), [])
    earned = {i.criterion_id: 0.0 if i.criterion_id in over else clamp(i.earned, rubric.get(i.criterion_id).max_points)
              for i in reply.items}
    return rubric_score(points(rubric, applies, earned)), earned, records


def per_criterion_median(applicable: Sequence[str], runs: Sequence[Rescoring],
                         earned: Sequence[dict[str, float]]) -> tuple[Rescoring, dict[str, float]]:
    """Per criterion, the (lower) median earned points across runs, and a table whose row for
    each criterion is the item of the run that gave that value (so justification and points agree)."""
    items: list[Any] = []
    out: dict[str, Any] = {}
    for cid in applicable:
        best = median_index([e[cid] for e in earned])
        out[cid] = earned[best][cid]
        items.append(next(i for i in runs[best].items if i.criterion_id == cid))
    return Rescoring.model_construct(items=items), out


def render_scores(rubric: Rubric, applies: dict[str, bool], reply: Rescoring | None,
                  earned: dict[str, float]) -> str:
    """The scored rubric as the outcome and diagnosis calls read it (reference only).

    Fenced like trajectory text: justifications quote what the agent and the pages said.
    """
    notes = {i.criterion_id: i for i in reply.items} if reply is not None else {}
    lines = []
    for c in rubric.criteria:
        if not applies[c.id]:
            lines.append(f"[{c.id}] does not apply (condition unmet)")
            continue
        why = notes[c.id].justification if c.id in notes else "(fallback: action-only score)"
        lines.append(f"[{c.id}] {earned.get(c.id, 0.0):g}/{c.max_points:g}: {why}")
    return "## Rubric scores (for reference; form your own view)\n" + fence("\n".join(lines), "rubric scores")
