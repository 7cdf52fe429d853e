"""Stage 9: the outcome from a reasonable user's point of view (V votes, strict majority of V).

The call sees the scored rubric (as reference), the evidence, the history, the final answer and
the final screenshot(s). A failed vote counts as invalid (None) and is listed in `degraded`. The
outcome is a strict majority of the V votes asked for (`verifier.scoring.majority`): when the valid
votes cannot decide it (e.g. one yes and two failed calls of three), the verification cannot
conclude and raises `JudgeUndecidedError` (unscored, `None` at the TRL boundary), because an outage
is not a verdict. Side effects and critical-point violations force failure in code
(`verifier.scoring.outcome_success`), whatever the votes.
The system prompt carries only the critical-point rules matching the rubric's permission profile.
"""
from __future__ import annotations

from ..errors import JudgeUndecidedError
from ..judge.base import ImagePart
from ..schemas import Outcome
from ..scoring import outcome_success
from .base import Run

STAGE = "outcome"


async def vote(r: Run, per_call: str, images: list[ImagePart], depth: int, i: int) -> Outcome:
    assert r.rubric is not None
    return await r.ask(STAGE, "outcome.system.j2", Outcome, depth=depth, per_call=per_call,
                       images=images, sampling=r.vote_sampling(i), images_droppable=True)


def per_call_text(scores_text: str, evidence_text: str, n_images: int) -> str:
    tail = f"\n\nThe final {n_images} distinct screenshot(s) follow." if n_images else ""
    return f"{scores_text}\n\n{evidence_text}\n\nDid the agent accomplish the task?{tail}"


def decide(r: Run, votes: list[bool | None], *, forced_failure: bool) -> bool:
    """The outcome of the V = `r.cfg.votes` votes asked for.

    Raises:
        JudgeUndecidedError: no forced failure, and the valid votes cannot decide a strict
            majority of V (the failed votes' reasons are in the message and in `degraded`).
    """
    asked = r.cfg.votes
    success = outcome_success(votes, forced_failure=forced_failure, asked=asked)
    if success is not None:
        return success
    yes, no = votes.count(True), votes.count(False)
    failed = [d.reason for d in r.ledger.degraded if d.stage == STAGE]
    raise JudgeUndecidedError(
        f"only {yes + no} of {asked} outcome votes are valid ({yes} yes, {no} no): they cannot decide a "
        f"strict majority of {asked}; first failed vote: {failed[0] if failed else 'unknown'}", stage=STAGE)
