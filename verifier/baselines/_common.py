"""What the baselines share: fenced trajectory text, usage accounting, and the result shape.

Baselines return the same `VerificationResult` as the Universal Verifier so the benchmark compares
them with one code path. They produce an outcome verdict only: `process_score` is the verdict as
0.0/1.0 (the schema requires a float) and `config["verifier"]` names the baseline, so nobody mistakes
it for a graded process score (the benchmark ignores it for baselines).
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence

from ..judge.base import Reply
from ..prompts import PromptInfo
from ..result import DegradedStage, RelevanceResult, StageUsage, UsageSummary, VerificationResult
from ..trajectory import Trajectory

FENCE = "untrusted_trajectory_data"
_TAG = re.compile(r"<\s*/?\s*untrusted[_\w]*\s*>", re.IGNORECASE)
_HIDDEN_ARGS = {"reasoning", "thought", "thoughts", "state_description", "screen_description"}


def fence(text: str) -> str:
    """Wrap agent/web text in the untrusted fence; look-alike tags inside are neutralised first."""
    return f"<{FENCE}>\n{_TAG.sub('[tag removed]', text)}\n</{FENCE}>"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[: limit // 2]} [...] {text[-limit // 2:]}"


def action_history(traj: Trajectory, *, max_arg_chars: int = 400, max_chars: int = 40_000) -> str:
    """Numbered actions with their arguments, agent reasoning stripped (as the published judges do)."""
    lines = []
    for s in traj.steps:
        args = {k: v for k, v in s.arguments.items() if k not in _HIDDEN_ARGS}
        arg_text = json.dumps(args, ensure_ascii=False, default=str) if args else ""
        lines.append(f"{s.index}. {s.action} {_cut(' '.join(arg_text.split()), max_arg_chars)}".rstrip())
    return _cut("\n".join(lines) or "(no actions)", max_chars)


def final_answer_text(traj: Trajectory) -> str:
    return "(the agent gave no final answer)" if traj.final_answer is None else traj.final_answer


class Tally:
    """Per-stage usage of one baseline run (calls, tokens, judge latency, failures)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.stages: dict[str, StageUsage] = {}
        self.models: list[str] = []
        self.prompts: dict[str, PromptInfo] = {}

    def add(self, stage: str, reply: Reply | None, *, round_no: int, failed: bool = False, usage=None) -> None:
        st = self.stages.setdefault(stage, StageUsage())
        st.calls += 1
        st.failed_calls += int(failed)
        st.round = max(st.round, round_no)
        u = reply.usage if reply is not None else usage
        if u is not None:
            st.prompt_tokens += u.prompt_tokens
            st.completion_tokens += u.completion_tokens
            st.latency_s += u.latency_s
            st.cache_hits += int(getattr(u, "cached", False))
        if reply is not None and reply.model and reply.model not in self.models:
            self.models.append(reply.model)

    def use(self, *infos: PromptInfo) -> None:
        for info in infos:
            self.prompts.setdefault(info.id, info)

    def summary(self) -> UsageSummary:
        st = self.stages.values()
        return UsageSummary(calls=sum(s.calls for s in st), prompt_tokens=sum(s.prompt_tokens for s in st),
                            completion_tokens=sum(s.completion_tokens for s in st),
                            latency_s=sum(s.latency_s for s in st), wall_s=time.perf_counter() - self.start,
                            rounds=max((s.round for s in st), default=0), per_stage=dict(self.stages))


def build_result(traj: Trajectory, *, verifier: str, success: bool, reasoning: str, tally: Tally,
                 options: dict, relevance: RelevanceResult | None = None, topk: dict[str, list[int]] | None = None,
                 degraded: Sequence[DegradedStage] = (), primary_intent: str = "") -> VerificationResult:
    score = 1.0 if success else 0.0
    return VerificationResult(
        trajectory_id=traj.source_path or traj.task.id, task_id=traj.task.id, task=traj.task.instruction,
        process_score=score, process_score_before_penalties=score, process_success=success,
        outcome_success=success, outcome_votes=[success], outcome_reasoning=reasoning,
        primary_intent=primary_intent, criteria=[],
        relevance=relevance or RelevanceResult(criteria=[], matrix=[]), topk=topk or {},
        degraded=list(degraded), usage=tally.summary(), config={"verifier": verifier, **options},
        models=tally.models, prompts=list(tally.prompts.values()))
