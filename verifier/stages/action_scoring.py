"""Stage 6a: action-only scoring, the first of the paper's two scoring passes.

The judge sees the rubric, the action history and the final answer, and no screenshot. Comparing
this score with the screenshot-grounded rescoring exposes claims the pixels do not support
(possible hallucination). It only needs the rubric, so it runs concurrently with relevance.
Its scores are also the documented fallback when every rescoring run fails (recorded as degraded).
"""
from __future__ import annotations

from ..narrowing import for_call
from ..rendering import fence
from ..schemas import ActionScores, Rubric
from ..scoring import clamp
from .base import Run

STAGE = "action_scoring"


async def run(r: Run, depth: int) -> ActionScores:
    assert r.rubric is not None
    model = for_call(ActionScores, r.rubric.ids())
    return await r.ask(STAGE, "action_scoring.system.j2", model, depth=depth,
                       per_call="Score every criterion from the action history and final answer only.")


def earned(rubric: Rubric, scores: ActionScores) -> dict[str, float]:
    """criterion id -> action-only points, clamped to [0, max]."""
    return {i.criterion_id: clamp(i.earned, rubric.get(i.criterion_id).max_points) for i in scores.items}


def render(rubric: Rubric, scores: ActionScores | None) -> str:
    """Text block of the action-only pass, for the rescoring call.

    Fenced: the justifications paraphrase the agent's claims, so an injected instruction can
    survive into them.
    """
    if scores is None:
        return "## Action-only scores\n(unavailable)"
    pts = earned(rubric, scores)
    lines = [f"[{i.criterion_id}] {pts[i.criterion_id]:g}/{rubric.get(i.criterion_id).max_points:g}: "
             f"{i.justification}" for i in scores.items]
    return ("## Action-only scores (from the action history alone, before any screenshot)\n"
            + fence("\n".join(lines), "action-only scores"))
