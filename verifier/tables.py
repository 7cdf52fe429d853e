"""The tables a verification's result carries, assembled from what its stages returned.

Why apart from the orchestrator: `pipeline.verify` decides which stage waits for what; turning the
stages' replies into `CriterionResult` rows and the history view is bookkeeping it need not hold.
"""
from __future__ import annotations

from .rendering import history_view
from .result import CriterionResult, EvidenceRecord, HistoryView
from .schemas import RealityCheck
from .stages.base import Run


def history_of(r: Run) -> HistoryView:
    """The most compressed history any call was sent, the context and every call shrunk to fit it."""
    view = history_view(r.traj, r.cfg, r.history_cut)[1]
    return view.model_copy(update={"context_tokens": r.budget.context if r.budget else None,
                                   "trims": sorted(r.trims.values(), key=lambda t: (t.stage, t.cuts))})


def criteria_table(r: Run, status, applies, earned, action, action_earned, canonical, ev_by,
                   reality_check: RealityCheck | None) -> list[CriterionResult]:
    """One row per rubric criterion: what it earned and why, from the rescoring's canonical table
    (None: action-only fallback), the action-only scores, the reality notes and the evidence."""
    assert r.rubric is not None
    notes = {i.criterion_id: i for i in canonical.items} if canonical is not None else {}
    reality = reality_check.texts() if reality_check is not None else {}
    acts = {i.criterion_id: i for i in action.items} if action is not None else {}
    out = []
    for c in r.rubric.criteria:
        cond, src = status.get(c.id, (None, "none"))
        n, a = notes.get(c.id), acts.get(c.id)
        got = earned.get(c.id, 0.0) if applies[c.id] else 0.0
        ao = action_earned.get(c.id) if action_earned is not None else None
        out.append(CriterionResult(
            id=c.id, name=c.name, description=c.description, max_points=c.max_points, condition=c.condition,
            exclusive_group=c.exclusive_group,
            condition_status="unconditional" if cond is None else ("met" if cond else "not_met"),
            condition_source=src, applies=applies[c.id], earned=got, action_only_earned=ao,
            action_only_justification=a.justification if a else "",
            justification=n.justification if n else ("" if applies[c.id] else "condition not met"),
            reality_notes=reality.get(c.id, ""),
            evidence_tag=n.evidence_tag.value if n else "no_evidence",
            evidence_screenshots=[k for k in n.evidence_screenshots if k <= len(r.traj.screenshots)] if n else [],
            evidence=[EvidenceRecord(screenshots=list(e.screenshots), visible=e.item.visible,
                                     claims_check=e.item.claims_check, discrepancies=e.item.discrepancies,
                                     blocker_visible=e.item.blocker_visible,
                                     condition=e.item.condition.value if e.item.condition else None)
                      for e in ev_by.get(c.id, [])],
            hallucination_suspected=bool(applies[c.id] and ao is not None and ao - got > c.max_points / 2)))
    return out
