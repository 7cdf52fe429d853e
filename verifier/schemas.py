"""Stage outputs: each pydantic model is both the JSON schema sent to the judge and its parser.

Why bounded everywhere (maxLength, maxItems, enums, ranges): a structured-output backend turns
these bounds into grammar constraints, so a reply can neither ramble nor invent keys, and a plain
JSON backend re-asks with the exact validation error. Replies are keyed by criterion id
("c1", "c2", ...) and screenshot number; the judge never echoes criterion text back.

Numbers sent to the judge are bounded integers only (points 0-10, relevance 0-10, penalty 1-3):
a float field lets a weak model write `1.0000...` until max_tokens even under constrained
decoding, because a range bounds the value, not the digits. Earned points are whole points; the
scoring math in `verifier.scoring` still works in floats (clamping, medians, penalties).
`tests/pipeline/test_schema_bounds.py` asserts that no output model has an unbounded path.

Per-call models are built from these by `verifier.narrowing.for_call(...)`, which narrows
`criterion_id` / `screenshot` to the ids of one call; `_Out` declares the `expected_ids` /
`expected_screenshots` the built class carries.
"""
from __future__ import annotations

from enum import Enum
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Text = Annotated[str, Field(max_length=1200)]


def Bounded(n: int) -> type[str]:
    """A string of at most `n` characters."""
    return Annotated[str, Field(max_length=n)]  # type: ignore[return-value]


# Why the bounds are tight: a weak judge under constrained decoding tends to fill every string to
# its maxLength and every list to its maxItems, and the reply must still fit in max_tokens (the
# random-weight engine-tier model truncated an Outcome whose worst case was 6.8k characters).
# Per-criterion fields repeat in one reply, so they get a few sentences each;
# tests/pipeline/test_schema_bounds.py pins the worst-case reply size of every model.
Short = Annotated[str, Field(max_length=200)]
Steps = Annotated[list[Annotated[int, Field(ge=0, le=10_000)]], Field(max_length=10)]
Shots = Annotated[list[Annotated[int, Field(ge=1, le=10_000)]], Field(max_length=10)]
Points = Annotated[int, Field(ge=0, le=10, description=(
    "Whole points earned, from 0 to the criterion's max points (values above the max are cut to it)."))]
MAX_CRITERIA = 12  # a rubric has at most this many criteria, so a per-criterion list has at most this many items
MAX_BATCH = 8  # relevance rows per call (VerifierConfig.relevance_batch_size <= 8)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")
    expected_ids: ClassVar[tuple[str, ...]] = ()
    expected_screenshots: ClassVar[tuple[int, ...]] = ()


# ---- 1. rubric -------------------------------------------------------------------------------
class DraftCriterion(_Out):
    """A criterion as the rubric writer produces it; code assigns ids c1..cN by position."""

    name: Bounded(120)
    description: Annotated[str, Field(max_length=1000, description=(
        "What earns full, partial and zero credit, including the uncontrollable cases "
        "(login wall, CAPTCHA, sold out, entity gone, no matching results) that still earn full credit."))]
    max_points: int = Field(ge=1, le=10)
    condition: Short | None = Field(default=None, description="When this criterion applies; null if always.")
    exclusive_group: Annotated[str, Field(max_length=40, pattern=r"^[A-Za-z0-9_\-]+$")] | None = Field(
        default=None, description="Label shared by mutually exclusive conditional alternatives.")


class RubricDraft(_Out):
    """Rubric writer reply: the task's stated sub-goals first, then criteria, then a self-audit."""

    stated_subgoals: list[Bounded(150)] = Field(min_length=1, max_length=12)
    critical_points: list[Bounded(150)] = Field(default_factory=list, max_length=6, description=(
        "Irreversible actions or personal data the user did not provide; never required to be crossed."))
    criteria: list[DraftCriterion] = Field(min_length=1, max_length=MAX_CRITERIA)
    self_audit: Bounded(800) = Field(description="Phantom criteria, overlaps, dependencies, double penalties checked.")

    @model_validator(mode="after")
    def _anchored(self) -> RubricDraft:
        # Some criterion must always apply, or the process score could have an empty denominator.
        if not any(c.condition is None or c.exclusive_group for c in self.criteria):
            raise ValueError("at least one criterion must be unconditional or in an exclusive group")
        return self


class Criterion(BaseModel):
    """A rubric criterion with its stable id. Penalty criteria come only from side-effect detection."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[cp]\d{1,3}$")
    name: str
    description: str
    max_points: float = Field(gt=0, le=10)
    condition: str | None = None
    exclusive_group: str | None = None
    is_penalty: bool = False


class Rubric(BaseModel):
    """The rubric used for scoring (after the optional audit), ids assigned in order."""

    model_config = ConfigDict(extra="forbid")
    criteria: list[Criterion]
    stated_subgoals: list[str] = Field(default_factory=list)
    critical_points: list[str] = Field(default_factory=list)
    self_audit: str = ""

    @classmethod
    def from_draft(cls, draft: RubricDraft) -> Rubric:
        crits = [Criterion(id=f"c{i}", name=d.name, description=d.description, max_points=d.max_points,
                           condition=d.condition or None,
                           exclusive_group=d.exclusive_group if d.condition else None)
                 for i, d in enumerate(draft.criteria, start=1)]
        return cls(criteria=crits, stated_subgoals=draft.stated_subgoals,
                   critical_points=draft.critical_points, self_audit=draft.self_audit)

    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.criteria)

    def get(self, cid: str) -> Criterion:
        return next(c for c in self.criteria if c.id == cid)


# ---- 2. relevance ----------------------------------------------------------------------------
class RelevanceScore(_Out):
    criterion_id: Annotated[str, Field(max_length=8)]
    score: int = Field(ge=0, le=10)


class RelevanceRow(_Out):
    screenshot: int = Field(ge=1, le=10_000)
    scores: list[RelevanceScore] = Field(max_length=MAX_CRITERIA)


class RelevanceBatch(_Out):
    rows: list[RelevanceRow] = Field(max_length=MAX_BATCH)


# ---- 4. evidence -----------------------------------------------------------------------------
class ConditionVerdict(str, Enum):
    met = "met"
    not_met = "not_met"
    unclear = "unclear"


class EvidenceItem(_Out):
    criterion_id: Annotated[str, Field(max_length=8)]
    visible: Bounded(600) = Field(description="What the pixels literally show for this criterion.")
    claims_check: Bounded(500) = Field(description="The agent's claims/actions compared with the pixels.")
    discrepancies: Bounded(400) = ""
    blocker_visible: bool = False
    condition: ConditionVerdict | None = Field(default=None, description="Only for conditional criteria.")


class EvidenceBatch(_Out):
    items: list[EvidenceItem] = Field(max_length=MAX_CRITERIA)


# ---- 5. conditions ---------------------------------------------------------------------------
class ConditionItem(_Out):
    criterion_id: Annotated[str, Field(max_length=8)]
    reasoning: Bounded(400)
    applies: bool


class ConditionDecision(_Out):
    items: list[ConditionItem] = Field(max_length=MAX_CRITERIA)


# ---- 6. action-only scoring ------------------------------------------------------------------
class ActionScore(_Out):
    criterion_id: Annotated[str, Field(max_length=8)]
    justification: Bounded(600)
    earned: Points
    condition_met: bool | None = None


class ActionScores(_Out):
    items: list[ActionScore] = Field(max_length=MAX_CRITERIA)


# ---- 7. rescoring ----------------------------------------------------------------------------
class EvidenceTag(str, Enum):
    """Agent claims vs pixels: the first three are penalised, the next two are not."""

    contradiction = "contradiction"
    fabrication = "fabrication"
    omission = "omission"
    inference_from_absence = "inference_from_absence"
    visual_confirmation = "visual_confirmation"
    consistent = "consistent"
    no_evidence = "no_evidence"


PENALISED_TAGS = frozenset({EvidenceTag.contradiction, EvidenceTag.fabrication, EvidenceTag.omission})


class RescoreItem(_Out):
    criterion_id: Annotated[str, Field(max_length=8)]
    reality_notes: Bounded(400) = Field(description="Facts about the real site that correct the rubric's assumptions.")
    evidence_tag: EvidenceTag
    evidence_screenshots: Shots = Field(default_factory=list)
    justification: Bounded(600)
    earned: Points


class Rescoring(_Out):
    items: list[RescoreItem] = Field(max_length=MAX_CRITERIA)


# ---- 8. side effects and critical points -----------------------------------------------------
class PenaltyItem(_Out):
    name: Bounded(120)
    description: Bounded(400)
    points: int = Field(ge=1, le=3)
    steps: Steps = Field(default_factory=list)
    screenshots: Shots = Field(default_factory=list)


class SideEffects(_Out):
    reasoning: Bounded(800)
    penalties: list[PenaltyItem] = Field(default_factory=list, max_length=3)
    critical_point_violation: bool = False
    critical_point_reasoning: Bounded(400) = ""


# ---- 9. outcome ------------------------------------------------------------------------------
class Outcome(_Out):
    primary_intent: Short
    reasoning: Bounded(1500)
    nitpicks: list[Bounded(160)] = Field(default_factory=list, max_length=5)
    critical_issues: list[Bounded(160)] = Field(default_factory=list, max_length=5)
    success: bool


# ---- 10. diagnosis ---------------------------------------------------------------------------
class ErrorCode(str, Enum):
    """7 categories / 24 subcategories (the catch-all "other" entries are not codes)."""

    missing_intent = "1.1"
    unauthorized_substitution = "1.2"
    wrong_action_type = "1.3"
    wrong_values = "1.4"
    output_contradiction = "2.1"
    action_contradiction = "2.2"
    output_fabrication = "2.3"
    action_fabrication = "2.4"
    computational_mistake = "3.1"
    platform_non_compliance = "3.2"
    api_sniffing = "3.2.1"
    incomplete_delivery = "3.3"
    environment_failure = "3.4"
    incomplete_execution = "3.5"
    premature_stop = "4.1"
    critical_point_violation = "4.2"
    unsolicited_side_effect = "5.1"
    invalid_invocation = "6.1"
    hallucinated_tool = "6.2"
    intent_action_mismatch = "6.3"
    grounding_miss = "6.4"
    grounding_target_absent = "6.5"
    underspecified_task = "7.1"
    ambiguous_task = "7.2"


CATEGORIES = {"1": "selection", "2": "hallucination", "3": "execution_strategy", "4": "critical_point",
              "5": "side_effect", "6": "tool_interaction", "7": "task_ambiguity"}


def category_of(code: ErrorCode) -> str:
    return CATEGORIES[code.value.split(".")[0]]


class FailurePoint(_Out):
    steps: list[Annotated[int, Field(ge=1, le=10_000)]] = Field(min_length=1, max_length=10)
    error_code: ErrorCode
    what_happened: Bounded(300)
    evidence: Bounded(300) = ""


class FailureReport(_Out):
    reasoning: Bounded(800)
    failure_points: list[FailurePoint] = Field(default_factory=list, max_length=5)


class TaskValidity(_Out):
    reasoning: Text
    ambiguity_codes: list[Literal["7.1", "7.2"]] = Field(default_factory=list, max_length=2)
