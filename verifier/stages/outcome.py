"""Stage 9: the outcome from a reasonable user's point of view (V votes, strict majority of V).

The call sees the scored rubric (as reference), the evidence, the history, the final answer and
the final screenshot(s). A failed vote counts as invalid (None) and is listed in `degraded`. The
outcome is a strict majority of the V votes asked for (`verifier.scoring.majority`): when the valid
votes cannot decide it (e.g. one yes and two failed calls of three), the verification cannot
conclude and raises `JudgeUndecidedError` (unscored, `None` at the TRL boundary), because an outage
is not a verdict. Side effects and critical-point violations force failure in code
(`verifier.scoring.outcome_success`), whatever the votes, and a vote counts as success only when none
of its own named checks (`schemas.OutcomeChecks`: deliverable shown, constraints shown met, critical
points respected, not blocked) answered "no".
The system prompt carries only the critical-point rules matching the rubric's permission profile.
"""
from __future__ import annotations

import asyncio

from ..errors import JudgeError, JudgeUndecidedError
from ..judge.base import ImagePart
from ..schemas import Outcome
from ..scoring import outcome_success
from .base import Run

STAGE = "outcome"


async def vote(r: Run, per_call: str, images: list[ImagePart], depth: int, i: int) -> Outcome:
    assert r.rubric is not None
    return await r.ask(STAGE, "outcome.system.j2", Outcome, depth=depth, per_call=per_call,
                       images=images, sampling=r.vote_sampling(i), images_droppable=True)


async def vote_all(r: Run, per_call: str, images: list[ImagePart],
                   depth: int) -> tuple[list[bool | None], list[Outcome], list[Outcome | None]]:
    """V outcome votes -> (votes with None for failed calls, the valid replies, every reply or None).
    A vote is its reply's success held to its own named checks (`vote_value`). All failing raises."""
    raw = await asyncio.gather(*(vote(r, per_call, images, depth, i) for i in range(r.cfg.votes)),
                               return_exceptions=True)
    for v in raw:
        if isinstance(v, BaseException):
            if not isinstance(v, JudgeError):
                raise v
            r.degrade(STAGE, v)
    ok = [v for v in raw if isinstance(v, Outcome)]
    if not ok:
        raise next(v for v in raw if isinstance(v, JudgeError))
    replies = [v if isinstance(v, Outcome) else None for v in raw]
    return [vote_value(v) if v is not None else None for v in replies], ok, replies


def failed_checks(reply: Outcome) -> list[str]:
    """The named checks of one vote answered "no" (schemas.OutcomeChecks): each vetoes its success."""
    return [name for name, answer in reply.checks.model_dump().items() if answer == "no"]


def vote_value(reply: Outcome) -> bool:
    """The vote as counted: the judge's `success` and no check of its own answered "no"."""
    return reply.success and not failed_checks(reply)


def check_overrules(replies: list[Outcome | None]) -> list[str]:
    """What the checks overruled, one line per vote that said success with a check answered "no"."""
    return [f"check {', '.join(failed_checks(v))}: no (outcome vote {i}, which said success)"
            for i, v in enumerate(replies, 1) if v is not None and v.success and failed_checks(v)]


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
