"""Stage 5: which conditional criteria apply. Decided in code when the evidence is determinate.

A criterion's own verdict is the LATEST screenshot evidence that is not "unclear", else the
action-only pass's `condition_met`, else unknown. Then:
- a standalone conditional criterion applies iff its verdict is met; unknown -> ask the judge;
- in an exclusive group exactly one member applies: the single member whose verdict is met, or
  the single member left when all others are not met; anything else -> ask the judge.
One judge call covers every undecided criterion. If it fails, the stage degrades: a group falls
back to its first member (the task's primary route), a standalone criterion to "does not apply"
(which leaves both sums, i.e. neutral). If in the end no criterion at all applies (possible only
for a rubric of standalone conditionals), every criterion is scored and the stage is degraded.
"""
from __future__ import annotations

from typing import Literal

from ..errors import JudgeError
from ..narrowing import for_call
from ..schemas import ActionScores, ConditionDecision, ConditionVerdict, Rubric
from .base import Run
from .evidence import Evidence

STAGE = "conditions"
Source = Literal["evidence", "action", "judge", "default"]
Status = dict[str, tuple[bool, Source]]


def verdict(cid: str, evidence: dict[str, list[Evidence]], action: ActionScores | None) -> tuple[bool | None, Source]:
    for ev in reversed(evidence.get(cid, [])):
        if ev.item.condition in (ConditionVerdict.met, ConditionVerdict.not_met):
            return ev.item.condition is ConditionVerdict.met, "evidence"
    if action is not None:
        for item in action.items:
            if item.criterion_id == cid and item.condition_met is not None:
                return item.condition_met, "action"
    return None, "default"


def groups(rubric: Rubric) -> tuple[dict[str, list[str]], list[str]]:
    """(exclusive group -> member ids in rubric order, standalone conditional ids)."""
    grouped: dict[str, list[str]] = {}
    alone: list[str] = []
    for c in rubric.criteria:
        if c.condition and c.exclusive_group:
            grouped.setdefault(c.exclusive_group, []).append(c.id)
        elif c.condition:
            alone.append(c.id)
    for label in [g for g, members in grouped.items() if len(members) == 1]:  # a group of one is no choice
        alone.append(grouped.pop(label)[0])
    return grouped, alone


def deterministic(rubric: Rubric, evidence: dict[str, list[Evidence]],
                  action: ActionScores | None) -> tuple[Status, list[str]]:
    """(decided statuses, undecided criterion ids). Unconditional criteria are not listed."""
    decided: Status = {}
    undecided: list[str] = []
    grouped, alone = groups(rubric)
    for cid in alone:
        v, src = verdict(cid, evidence, action)
        if v is None:
            undecided.append(cid)
        else:
            decided[cid] = (v, src)
    for members in grouped.values():
        vs = {m: verdict(m, evidence, action) for m in members}
        met = [m for m in members if vs[m][0] is True]
        open_ = [m for m in members if vs[m][0] is not False]
        winner = met[0] if len(met) == 1 else (open_[0] if len(open_) == 1 and not met else None)
        if winner is None:
            undecided.extend(members)
            continue
        src = vs[winner][1] if vs[winner][0] is not None else vs[next(m for m in members if m != winner)][1]
        for m in members:
            decided[m] = (m == winner, src)
    return decided, undecided


def fallback(rubric: Rubric, undecided: list[str], applies: dict[str, bool] | None = None,
             source: Source = "default") -> Status:
    """Statuses for `undecided`, from the judge's answers if any, repaired so each group has exactly one."""
    applies = applies or {}
    grouped, _ = groups(rubric)
    out: Status = {}
    for cid in undecided:
        out[cid] = (applies.get(cid, False), source if cid in applies else "default")
    for members in grouped.values():
        todo = [m for m in members if m in undecided]
        if not todo:
            continue
        yes = [m for m in todo if out[m][0]]
        winner = yes[0] if yes else todo[0]
        for m in todo:
            out[m] = (m == winner, out[m][1] if len(yes) == 1 else "default")
    return out


def ensure_some_apply(rubric: Rubric, status: Status) -> tuple[Status, bool]:
    """(status, repaired): if no criterion would apply, every criterion applies (source "default").

    Only a rubric made of standalone conditional criteria can get here (an exclusive group always
    keeps one member). Scoring nothing is undefined, and dropping the verification would turn a
    judge's odd reading of the conditions into a lost reward; scoring every criterion credits only
    what the agent actually did. The caller records the repair in `degraded`.
    """
    if any(status.get(c.id, (True, "none"))[0] for c in rubric.criteria):
        return status, False
    return {**status, **{c.id: (True, "default") for c in rubric.criteria if c.condition}}, True


async def run(r: Run, evidence: dict[str, list[Evidence]], action: ActionScores | None,
              evidence_text: str, depth: int) -> tuple[Status, int]:
    """All conditional statuses and the round this stage finished in (depth-1 if no call was needed)."""
    assert r.rubric is not None
    decided, undecided = deterministic(r.rubric, evidence, action)
    if not undecided:
        return _anchored(r, decided), depth - 1
    model = for_call(ConditionDecision, tuple(undecided))
    ask = "Decide whether these conditional criteria apply: " + ", ".join(undecided)
    try:
        reply = await r.ask(STAGE, "conditions.system.j2", model, depth=depth,
                            per_call=evidence_text + "\n\n" + ask)
    except JudgeError as exc:
        r.degrade(STAGE, exc)
        return _anchored(r, {**decided, **fallback(r.rubric, undecided)}), depth
    answers = {i.criterion_id: i.applies for i in reply.items}
    return _anchored(r, {**decided, **fallback(r.rubric, undecided, answers, "judge")}), depth


def _anchored(r: Run, status: Status) -> Status:
    assert r.rubric is not None
    status, repaired = ensure_some_apply(r.rubric, status)
    if repaired:
        r.degrade(STAGE, "no conditional criterion's condition was met and no criterion is unconditional: "
                  "every criterion is scored")
    return status
