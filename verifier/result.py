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

# 1.1: null process fields (verdict-only); 1.2: history, permission, claims, truncations;
# 1.3: truncated (reply fields at their bound), overruled and permission_overruled (code guards)
RESULT_SCHEMA_VERSION = "1.3"


class EvidenceRecord(BaseModel):
    """What one analysed screenshot showed for one criterion (numbers: identical frames together)."""

    screenshots: list[int]
    visible: str
    claims_check: str
    discrepancies: str = ""
    blocker_visible: bool = False
    condition: str | None = None


class CriterionResult(BaseModel):
    """One rubric criterion as judged for this trajectory: the row a human audits a score by.

    Why so wide: a process score is only trustworthy if each point can be traced to what the
    screenshots showed (`evidence`, `reality_notes`, `evidence_tag`) and compared with what the agent
    claimed (`action_only_earned`); `applies`/`condition_*` explain criteria scored as not applicable
    (they leave the denominator instead of scoring 0).
    """

    id: str
    name: str
    description: str
    max_points: float
    condition: str | None = None
    exclusive_group: str | None = None
    condition_status: Literal["unconditional", "met", "not_met"] = "unconditional"
    condition_source: Literal["none", "evidence", "action", "judge", "default"] = "none"
    """Who decided the condition: screenshot evidence, the action-only scorer, a dedicated judge
    call, or the default repair of an exclusive group (least trustworthy last)."""
    applies: bool = True
    """False: condition not met, so the criterion counts neither in `earned` nor in the maximum."""
    earned: float = 0.0
    """Screenshot-based points (clamped to [0, max]) of the median rescoring run, or with
    `rescoring_median="criterion"` this criterion's median across runs."""
    action_only_earned: float | None = None
    """Points from the agent's actions and claims alone (no screenshots); None if that stage failed."""
    action_only_justification: str = ""
    justification: str = ""
    reality_notes: str = ""
    evidence_tag: str = "no_evidence"
    """How the screenshots relate to the agent's claims for this criterion (consistent, contradicts, ...)."""
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


class Truncation(BaseModel):
    """A trajectory field the judge saw cut (middle elided, head and tail kept)."""

    field: str
    original_chars: int
    kept_chars: int


class StageUsage(BaseModel):
    calls: int = 0
    cache_hits: int = 0
    """Answers that cost no judge work: a shared stage memo (rubric, relevance row) or the judge's
    own reply cache."""
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int | None = None
    """Prompt tokens the judge served from its prefix cache (None: the server does not report it)."""
    latency_s: float = 0.0
    round: int = 0
    """Deepest DAG round a call of this stage ran in (1 = first sequential round)."""


class CallTrim(BaseModel):
    """Calls of one stage shrunk the same way to fit the judge's context (`verifier.budget`)."""

    stage: str
    calls: int = 0
    cuts: list[str] = Field(default_factory=list)
    """Shrink steps applied, in order (`verifier.budget.STEPS`)."""
    screenshots_dropped: int = 0
    """Final screenshots left out of the largest such call (the last one is always sent)."""
    tokens_before: int = 0
    """Estimated prompt tokens of the largest such call as built..."""
    tokens_after: int = 0
    """...and as sent (the estimate, before the reply budget)."""
    reply_tokens: int | None = None
    """The least reply room such a call was sent with, where its prompt left less than the stage's
    reply reserve (its output schema's worst case); None: the whole reserve."""


class HistoryView(BaseModel):
    """How the action history was shown to the judge (issue 9, H1: a long history is never cut silently).

    Over `budget` characters the renderer compresses in a fixed order: thoughts shortened, then
    thoughts left out, then long arguments/URLs shortened. Every step's action line is always kept,
    even when that leaves the text over budget (`over_budget`), and the judge is told what was done.
    """

    steps: int = 0
    chars: int = 0
    budget: int = 0
    thoughts: Literal["full", "shortened", "older_omitted", "omitted"] = "full"
    arguments: Literal["full", "shortened"] = "full"
    over_budget: bool = False
    context_tokens: int | None = None
    """The judge's context the calls were budgeted against (None: unknown, not budgeted)."""
    trims: list[CallTrim] = Field(default_factory=list)
    """Calls shrunk to fit that context (issue 24), per stage and set of steps; empty when every
    call fitted as built. The view above is the most compressed history any call was sent."""

    @property
    def compressed(self) -> bool:
        return self.thoughts != "full" or self.arguments != "full"


class UsageSummary(BaseModel):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int | None = None
    """Of `prompt_tokens`, those the judge's prefix cache served (None: the server does not say;
    vLLM reports them with ``--enable-prompt-tokens-details``)."""
    latency_s: float = 0.0
    """Sum of per-call latencies (judge time); wall_s is the elapsed time."""
    wall_s: float = 0.0
    rounds: int = 0
    """Sequential rounds of judge calls on the critical path (cache hits count as no round)."""
    per_stage: dict[str, StageUsage] = Field(default_factory=dict)


class VerificationResult(BaseModel):
    """The verdicts on one trajectory, the evidence behind them, and what it cost to get them.

    Two verdicts, on purpose: `process_score` grades *how much* of the task was done (partial
    credit, for shaping rewards and finding failure points) and `outcome_success` says whether the
    user got what they asked for (the number that must not be fooled). They can disagree, e.g. a
    run that did every step but then broke something gets a high process score and a failed outcome.
    A result may be `degraded`; read that list before trusting the numbers.
    """

    schema_version: str = RESULT_SCHEMA_VERSION
    trajectory_id: str
    task_id: str
    task: str = ""
    process_score: float | None
    """Median over V runs of eq. 1 after penalties, in [0, 1]. None for verdict-only verifiers (the
    baselines), which grade no process: a 0/1 copied from their verdict would fake a graded score."""
    process_score_before_penalties: float | None
    """The rubric score alone (eq. 1 of the rescoring median), before side-effect penalties:
    the gap to `process_score` is what the penalties cost, kept apart so a low score can be
    attributed to unfinished work or to harm done."""
    process_success: bool | None
    """`process_score >= config.process_threshold`; None when there is no process score."""
    action_only_score: float | None = None
    hallucination_suspected: bool = False
    grounded: bool = False
    """True when the judge saw screenshots of the run. False is action-only mode: with no
    screenshots the verdict rests on the agent's own account of its actions, which a policy could
    game by claiming success, so trainers log it (`uv_grounded`) and can refuse such rows."""
    rescoring_scores: list[float] = Field(default_factory=list)
    outcome_success: bool
    outcome_votes: list[bool | None] = Field(default_factory=list)
    """One entry per outcome vote (V = config.votes), None where that call failed. `outcome_success`
    needs more than half of *all* V votes to say success (a failed vote counts against, ties fail),
    and no `forced_failure`."""
    outcome_reasoning: str = ""
    primary_intent: str = ""
    nitpicks: list[str] = Field(default_factory=list)
    critical_issues: list[str] = Field(default_factory=list)
    critical_point_violation: bool = False
    permission_profile: dict[str, Any] | None = None
    """The rubric call's permission profile (permission granted / not granted / no critical point,
    personal data the task lacks, underspecified aspects): it selected the critical-point rules the
    outcome and side-effect calls were given."""
    permission_overruled: str = ""
    """Non-empty when the judge's "granted" was overruled to "not granted" because its quote is not
    in the task text or is shorter than three words (`verifier.guards.check_permission`); the
    profile above is the corrected one."""
    overruled: list[str] = Field(default_factory=list)
    """Every judge claim code overruled (`verifier.guards`): the permission grant above, reality-note
    credit resting on no shown screenshot (that criterion earned 0), and cited screenshot or step
    numbers that were not shown in that call or are not in the history (rejected)."""
    forced_failure: list[str] = Field(default_factory=list)
    """Why the outcome was forced to fail regardless of votes (penalties, critical point). Non-empty
    means `outcome_success` is False even if every vote said success: harm is not outvoted. Each
    reason rests on cited screenshots and, with V > 1, on a majority of the V side-effect votes."""
    unsupported_claims: list[str] = Field(default_factory=list)
    """Side effects or violations the judge reported without a screenshot inside this run to show
    them: dropped (they neither lower the score nor force failure), but listed here."""
    history: HistoryView | None = None
    """How the action history was rendered for the judge (compressed or not)."""
    criteria: list[CriterionResult]
    penalties: list[PenaltyResult] = Field(default_factory=list)
    side_effects_reasoning: str = ""
    relevance: RelevanceResult
    topk: dict[str, list[int]] = Field(default_factory=dict)
    """Criterion id -> screenshots analysed for it (after pruning), best first."""
    rubric_self_audit: str = ""
    diagnosis: DiagnosisResult | None = None
    degraded: list[DegradedStage] = Field(default_factory=list)
    """Stages the run did without, and why. Empty means every stage answered. Entries that matter
    most: "rescoring" (no run survived; the process score is the action-only fallback),
    "side_effects" (no penalties or forced failure could be applied), "rubric_audit" (the rubric
    was used unaudited; replayed into every rollout sharing that cached rubric)."""
    truncated: list[str] = Field(default_factory=list)
    """Judge reply fields that reached their schema bound (``stage:path``, e.g.
    ``rescoring:items[0].justification``): constrained decoding may have cut them, so the verdict
    may rest on incomplete text. The bounds are in `verifier.limits` (docs/limits.md)."""
    truncations: list[Truncation] = Field(default_factory=list)
    """Trajectory fields shown to the judge cut to their configured cap (e.g. a final answer over
    `max_final_answer_chars`): the verdict is on what the judge saw, so the cut is on record."""
    usage: UsageSummary = Field(default_factory=UsageSummary)
    config: dict[str, Any] = Field(default_factory=dict)
    models: list[str] = Field(default_factory=list)
    prompts: list[PromptInfo] = Field(default_factory=list)

    def summary(self) -> str:
        """One line for logs and progress bars."""
        process = ("no process score" if self.process_score is None else
                   f"process {self.process_score:.2f} ({'pass' if self.process_success else 'fail'})")
        return (f"{self.trajectory_id}: {process}, outcome "
                f"{'success' if self.outcome_success else 'failure'}, {self.usage.calls} calls, "
                f"{self.usage.rounds} rounds" + (f", degraded: {len(self.degraded)}" if self.degraded else ""))
