"""Stage outputs: each pydantic model is both the JSON schema sent to the judge and its parser.

Why bounded everywhere (maxLength, maxItems, enums, ranges): a structured-output backend turns
these bounds into grammar constraints, so a reply can neither ramble nor invent keys, and a plain
JSON backend re-asks with the exact validation error. Replies are keyed by criterion id
("c1", "c2", ...) and screenshot number; the judge never echoes criterion text back.

Numbers sent to the judge are bounded integers (relevance 0-10, penalty 1-3, max points 1-10)
except earned points, which are half points: a number in [0, 10] with ``multipleOf`` 0.5, so the
partial-credit band of a 1-3 point criterion is reachable (paper eq. 1 is unchanged). A bare float
would let a weak model write `1.0000...` until max_tokens even under constrained decoding, because
a range bounds the value, not the digits; the 0.5 step bounds the digits too (one decimal).
`tests/pipeline/test_schema_bounds.py` asserts that no output model has an unbounded path and that
earned points are the only non-integer numbers.

Per-call models are built from these by `verifier.narrowing.for_call(...)`, which narrows
`criterion_id` / `screenshot` to the ids of one call; `_Out` declares the `expected_ids` /
`expected_screenshots` the built class carries.
"""
from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, ClassVar, Literal

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
Points = Annotated[float, Field(ge=0, le=10, multiple_of=0.5, description=(
    "Points earned in half points (0, 0.5, 1, ...), from 0 to the criterion's max points "
    "(values above the max are cut to it)."))]
MAX_CRITERIA = 12  # a rubric has at most this many criteria, so a per-criterion list has at most this many items
MAX_BATCH = 8  # relevance rows per call (VerifierConfig.relevance_batch_size <= 8)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")
    expected_ids: ClassVar[tuple[str, ...]] = ()
    expected_screenshots: ClassVar[tuple[int, ...]] = ()
    #: The wire schema, when `narrowing.for_call` derived it from a template (`judge.schema.json_schema_for`).
    wire_schema: ClassVar[dict[str, Any] | None] = None


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


Permission = Literal["granted", "not_granted", "no_critical_point"]


class PermissionProfile(_Out):
    """What the task allows at its critical points, written by the rubric call from the task alone.

    Why a schema field: the outcome and side-effect prompts render only the critical-point rules
    that match it (`prompts/principles/critical_point_rules.j2`), so a task that grants permission
    is not judged by the stop-at-the-boundary rules, and the result records the profile used.
    The default (no profile written) is the cautious one: permission not granted.
    """

    permission: Permission = "not_granted"
    permission_quote: Bounded(120) = Field(default="", description="The task's words granting permission, if any.")
    missing_personal_data: list[Bounded(40)] = Field(default_factory=list, max_length=5, description=(
        "Personal data a correct attempt would need that the task does not give."))
    underspecified: list[Bounded(100)] = Field(default_factory=list, max_length=3, description=(
        "Choices the task leaves open; any reasonable resolution earns credit."))


class RubricDraft(_Out):
    """Rubric writer reply: stated sub-goals, the permission profile, criteria, then a self-audit.

    Field order is generation order under constrained decoding: the profile is decided before the
    criteria it shapes.
    """

    stated_subgoals: list[Bounded(150)] = Field(min_length=1, max_length=12)
    permission_profile: PermissionProfile = Field(default_factory=PermissionProfile)
    critical_points: list[Bounded(150)] = Field(default_factory=list, max_length=6, description=(
        "Irreversible or binding steps of this task; crossing one is required only with permission."))
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
    permission: PermissionProfile = Field(default_factory=PermissionProfile)
    self_audit: str = ""

    @classmethod
    def from_draft(cls, draft: RubricDraft) -> Rubric:
        crits = [Criterion(id=f"c{i}", name=d.name, description=d.description, max_points=d.max_points,
                           condition=d.condition or None,
                           exclusive_group=d.exclusive_group if d.condition else None)
                 for i, d in enumerate(draft.criteria, start=1)]
        return cls(criteria=crits, stated_subgoals=draft.stated_subgoals,
                   critical_points=draft.critical_points, permission=draft.permission_profile,
                   self_audit=draft.self_audit)

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


class RealityNote(_Out):
    criterion_id: Annotated[str, Field(max_length=8)]
    note: Bounded(400) = Field(description=(
        "Facts about the real site or item that correct the rubric's assumptions; never about the agent."))


class RescoreItem(_Out):
    criterion_id: Annotated[str, Field(max_length=8)]
    evidence_tag: EvidenceTag
    evidence_screenshots: Shots = Field(default_factory=list)
    justification: Bounded(600)
    earned: Points


class Rescoring(_Out):
    """Reality notes for every criterion come first, then the scores.

    Why this order: under constrained decoding the reply is generated field by field, so every
    factual note is fixed before the first point is awarded and cannot be written to justify a
    score already given (the reference used a separate call; this costs no call and no round).
    """

    reality_notes: list[RealityNote] = Field(default_factory=list, max_length=MAX_CRITERIA)
    items: list[RescoreItem] = Field(max_length=MAX_CRITERIA)

    def notes(self) -> dict[str, str]:
        return {n.criterion_id: n.note for n in self.reality_notes}


# ---- 8. side effects and critical points -----------------------------------------------------
class PenaltyItem(_Out):
    name: Bounded(120)
    description: Bounded(400)
    points: int = Field(ge=1, le=3)
    steps: Steps = Field(default_factory=list)
    screenshots: Annotated[list[Annotated[int, Field(ge=1, le=10_000)]], Field(min_length=1, max_length=10)] = Field(
        description="Screenshot numbers that show the side effect (required: a penalty forces failure).")


class SideEffects(_Out):
    reasoning: Bounded(800)
    penalties: list[PenaltyItem] = Field(default_factory=list, max_length=3)
    critical_point_violation: bool = False
    critical_point_reasoning: Bounded(360) = ""
    critical_point_screenshots: Shots = Field(default_factory=list, description=(
        "Screenshot numbers that show the crossing; required when critical_point_violation is true."))

    @model_validator(mode="after")
    def _evidenced(self) -> SideEffects:
        # A violation forces the outcome to fail, so it must point at the pixels that show it.
        if self.critical_point_violation and not self.critical_point_screenshots:
            raise ValueError("critical_point_violation needs critical_point_screenshots")
        return self


# ---- 9. outcome ------------------------------------------------------------------------------
class Outcome(_Out):
    primary_intent: Short
    reasoning: Bounded(1500)
    nitpicks: list[Bounded(160)] = Field(default_factory=list, max_length=5)
    critical_issues: list[Bounded(160)] = Field(default_factory=list, max_length=5)
    success: bool


# ---- 10. diagnosis ---------------------------------------------------------------------------
class ErrorCode(str, Enum):
    """7 categories / 24 subcategories, plus one catch-all "other" for a material failure no code fits."""

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
    other = "other"


CATEGORIES = {"1": "selection", "2": "hallucination", "3": "execution_strategy", "4": "critical_point",
              "5": "side_effect", "6": "tool_interaction", "7": "task_ambiguity", "other": "other"}


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
