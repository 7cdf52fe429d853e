"""`VerificationResult`: the one versioned, JSON-serialisable output of `verify()`.

It carries the verdicts (process score and success, outcome and its reasoning), the evidence
behind them (a per-criterion table, the relevance matrix, the top-k groups, penalties, the
diagnosis), and the provenance needed to trust or reproduce them (config, model ids, prompt
ids/versions/hashes, calls/tokens/latency/rounds per stage, and every stage that degraded).
See the README, section "Reading a result".
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from .prompts import PromptInfo

RESULT_SCHEMA_VERSION = "1.0"


class EvidenceRecord(BaseModel):
    """What one analysed screenshot showed for one criterion (numbers: identical frames together)."""

    screenshots: list[int]
    visible: str
    claims_check: str
    discrepancies: str = ""
    blocker_visible: bool = False
    condition: str | None = None


class CriterionResult(BaseModel):
    id: str
    name: str
    description: str
    max_points: float
    condition: str | None = None
    exclusive_group: str | None = None
    condition_status: Literal["unconditional", "met", "not_met"] = "unconditional"
    condition_source: Literal["none", "evidence", "action", "judge", "default"] = "none"
    applies: bool = True
    earned: float = 0.0
    """Screenshot-based points (clamped to [0, max]) of the median rescoring run, or with
    `rescoring_median="criterion"` this criterion's median across runs."""
    action_only_earned: float | None = None
    action_only_justification: str = ""
    justification: str = ""
    reality_notes: str = ""
    evidence_tag: str = "no_evidence"
    evidence_screenshots: list[int] = Field(default_factory=list)
    evidence: list[EvidenceRecord] = Field(default_factory=list)
    hallucination_suspected: bool = False
    """Action-only credit exceeds screenshot credit by more than half the criterion's points."""


class PenaltyResult(BaseModel):
    name: str
    description: str
    points: int
    steps: list[int] = Field(default_factory=list)
    screenshots: list[int] = Field(default_factory=list)


class RelevanceResult(BaseModel):
    """M x N relevance matrix (row i = screenshot i+1; None = its relevance call failed)."""

    criteria: list[str]
    matrix: list[list[int] | None]
    duplicates: list[list[int]] = Field(default_factory=list)
    """Groups of byte-identical screenshots (scored and analysed once)."""


class FailurePointResult(BaseModel):
    steps: list[int]
    error_code: str
    category: str
    what_happened: str
    evidence: str = ""


class DiagnosisResult(BaseModel):
    first_failure_step: int | None = None
    failure_points: list[FailurePointResult] = Field(default_factory=list)
    categories: list[str] = Field(default_factory=list)
    task_ambiguity_codes: list[str] = Field(default_factory=list)
    reasoning: str = ""


class DegradedStage(BaseModel):
    """A stage the run did without (its calls failed after retries) and why.

    A degraded result is still a result, but a weaker one: consumers decide how much to trust it
    (the TRL reward returns None for the stages in `RewardSettings.none_if_degraded`).
    """

    stage: str
    reason: str

    @classmethod
    def of(cls, stage: str, reason: str | BaseException) -> DegradedStage:
        text = reason if isinstance(reason, str) else f"{type(reason).__name__}: {reason}"
        return cls(stage=stage, reason=text[:1000])


class StageUsage(BaseModel):
    calls: int = 0
    cache_hits: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    round: int = 0
    """Deepest DAG round a call of this stage ran in (1 = first sequential round)."""


class UsageSummary(BaseModel):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    """Sum of per-call latencies (judge time); wall_s is the elapsed time."""
    wall_s: float = 0.0
    rounds: int = 0
    """Sequential rounds of judge calls on the critical path (cache hits count as no round)."""
    per_stage: dict[str, StageUsage] = Field(default_factory=dict)


class VerificationResult(BaseModel):
    schema_version: str = RESULT_SCHEMA_VERSION
    trajectory_id: str
    task_id: str
    task: str = ""
    process_score: float
    """Median over V runs of eq. 1 after penalties, in [0, 1]."""
    process_score_before_penalties: float
    process_success: bool
    action_only_score: float | None = None
    hallucination_suspected: bool = False
    rescoring_scores: list[float] = Field(default_factory=list)
    outcome_success: bool
    outcome_votes: list[bool | None] = Field(default_factory=list)
    outcome_reasoning: str = ""
    primary_intent: str = ""
    nitpicks: list[str] = Field(default_factory=list)
    critical_issues: list[str] = Field(default_factory=list)
    critical_point_violation: bool = False
    forced_failure: list[str] = Field(default_factory=list)
    """Why the outcome was forced to fail regardless of votes (penalties, critical point)."""
    criteria: list[CriterionResult]
    penalties: list[PenaltyResult] = Field(default_factory=list)
    side_effects_reasoning: str = ""
    relevance: RelevanceResult
    topk: dict[str, list[int]] = Field(default_factory=dict)
    """Criterion id -> screenshots analysed for it (after pruning), best first."""
    rubric_self_audit: str = ""
    diagnosis: DiagnosisResult | None = None
    degraded: list[DegradedStage] = Field(default_factory=list)
    usage: UsageSummary = Field(default_factory=UsageSummary)
    config: dict[str, Any] = Field(default_factory=dict)
    models: list[str] = Field(default_factory=list)
    prompts: list[PromptInfo] = Field(default_factory=list)

    def summary(self) -> str:
        """One line for logs and progress bars."""
        return (f"{self.trajectory_id}: process {self.process_score:.2f} "
                f"({'pass' if self.process_success else 'fail'}), outcome "
                f"{'success' if self.outcome_success else 'failure'}, {self.usage.calls} calls, "
                f"{self.usage.rounds} rounds" + (f", degraded: {len(self.degraded)}" if self.degraded else ""))
