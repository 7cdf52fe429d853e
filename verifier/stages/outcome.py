"""Stage 9: the outcome from a reasonable user's point of view (V votes, strict majority).

The call sees the scored rubric (as reference), the evidence, the history, the final answer and
the final screenshot(s). A failed vote counts as invalid (None): it never counts as success, and
it is listed in `degraded`. If every vote fails the verification cannot conclude and raises.
Side effects and critical-point violations force failure in code (`verifier.scoring.outcome_success`).
The system prompt carries only the critical-point rules matching the rubric's permission profile.
"""
from __future__ import annotations

from ..judge.base import ImagePart
from ..schemas import Outcome
from .base import Run

STAGE = "outcome"


async def vote(r: Run, per_call: str, images: list[ImagePart], depth: int, i: int) -> Outcome:
    assert r.rubric is not None
    return await r.ask(STAGE, "outcome.system.j2", Outcome, depth=depth, per_call=per_call,
                       images=images, sampling=r.vote_sampling(i),
                       variables={"profile": r.rubric.permission})  # selects the critical-point rules


def per_call_text(scores_text: str, evidence_text: str, n_images: int) -> str:
    tail = f"\n\nThe final {n_images} distinct screenshot(s) follow." if n_images else ""
    return f"{scores_text}\n\n{evidence_text}\n\nDid the agent accomplish the task?{tail}"
