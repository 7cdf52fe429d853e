"""What the baselines share: fenced trajectory text, usage accounting, and the result shape.

Baselines return the same `VerificationResult` as the Universal Verifier so the benchmark compares
them with one code path (the final answer capped and the cut recorded as the pipeline does). They produce an outcome verdict only, so `process_score` and
`process_success` are None (not the verdict dressed up as a score) and `config["verifier"]` names
the baseline. Fencing, eliding and usage accounting are the pipeline's own (`rendering.fence`,
`rendering.elide`, `stages.base.Ledger`): one place defuses fence breakouts for every verifier.
"""
from __future__ import annotations

import json
from collections.abc import Sequence

from ..config import VerifierConfig
from ..coordinates import shown_arguments
from ..judge.base import Reply
from ..prompts import PromptInfo
from ..rendering import elide, fence, truncations
from ..result import DegradedStage, RelevanceResult, VerificationResult
from ..stages.base import Ledger
from ..trajectory import Trajectory

__all__ = ["Ledger", "action_history", "build_result", "fence", "final_answer_text", "record"]

_HIDDEN_ARGS = {"reasoning", "thought", "thoughts", "state_description", "screen_description"}


def action_history(traj: Trajectory, *, max_arg_chars: int = 400, max_chars: int = 40_000) -> str:
    """Numbered actions with their arguments, agent reasoning stripped (as the published judges do)."""
    lines = []
    for s in traj.steps:
        args = {k: v for k, v in shown_arguments(s.arguments, s.screen).items() if k not in _HIDDEN_ARGS}
        arg_text = json.dumps(args, ensure_ascii=False, default=str) if args else ""
        lines.append(f"{s.index}. {s.action} {elide(' '.join(arg_text.split()), max_arg_chars)}".rstrip())
    return elide("\n".join(lines) or "(no actions)", max_chars)


def final_answer_text(traj: Trajectory) -> str:
    """The answer capped as the pipeline caps it (default `max_final_answer_chars`, head and tail)."""
    return "(the agent gave no final answer)" if traj.final_answer is None else elide(
        traj.final_answer, VerifierConfig().max_final_answer_chars)


def record(ledger: Ledger, stage: str, reply: Reply | None, *, round_no: int, failed: bool = False,
           usage=None, infos: Sequence[PromptInfo] = ()) -> None:
    """One baseline judge call (or failure) into the ledger, with the prompts it used."""
    ledger.record(stage, reply.usage if reply is not None else usage, round_no,
                  model=reply.model if reply is not None else None, failed=failed)
    ledger.add_infos(*infos)


def build_result(traj: Trajectory, *, verifier: str, success: bool, reasoning: str, ledger: Ledger,
                 wall_s: float, options: dict, relevance: RelevanceResult | None = None,
                 topk: dict[str, list[int]] | None = None, degraded: Sequence[DegradedStage] = (),
                 primary_intent: str = "") -> VerificationResult:
    return VerificationResult(
        trajectory_id=traj.source_path or traj.task.id, task_id=traj.task.id, task=traj.task.instruction,
        process_score=None, process_score_before_penalties=None, process_success=None,
        outcome_success=success, outcome_votes=[success], outcome_reasoning=reasoning,
        grounded=bool(traj.screenshots),
        primary_intent=primary_intent, criteria=[],
        relevance=relevance or RelevanceResult(criteria=[], matrix=[]), topk=topk or {},
        degraded=[*ledger.degraded, *degraded], usage=ledger.summary(wall_s=wall_s),
        truncations=truncations(traj),
        config={"verifier": verifier, **options}, models=sorted(ledger.models),
        prompts=sorted(ledger.prompts.values(), key=lambda p: p.id))
