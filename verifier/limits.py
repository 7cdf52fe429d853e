"""Every bound of the judge's replies, in one place (the table in docs/limits.md lists them all).

Why these sizes: the reference verifier's published outputs for the 106 Browserbase tasks of
CUAVerifierBench (a GPT-5.2 judge) are the one real record of what a capable judge writes, and our
first bounds were too tight for at least 15 of those tasks. Each bound below sits at least twice
above the largest value seen there (`REAL_MAXIMA`, tested in tests/pipeline/test_limits.py), so a
real judge is not cut off by the contract; bounds the figures say nothing about are sized from the
same reasoning (a few sentences per field, more for whole-reply reasoning).

Why bounds at all: a structured-output backend turns them into grammar constraints, so even a
weak model closes every string and list, and `judge.schema.reply_token_budget` can size
``max_tokens`` from the worst-case reply. A value that reaches its bound may have been cut by
constrained decoding, so it is recorded in `VerificationResult.truncated` (never cut silently),
and every bounded string's description tells the judge its limit (`describe_chars`).

Numbers are plain ints so they can be used in `Field(...)`, templates and docs alike.
"""
from __future__ import annotations

# ---- rubric ----------------------------------------------------------------------------------
MAX_CRITERIA = 18
"""Criteria per rubric (real: 1-9, median 3)."""
MAX_CRITERION_POINTS = 24
"""Max points of one criterion, and the top of an earned-points value (real: integers 1-12)."""
CRITERION_NAME_CHARS = 350
"""A criterion's name (real: up to 167, six of 369 over 120, all "X (or report Y)")."""
CRITERION_DESCRIPTION_CHARS = 2400
"""A criterion's description with its full / partial / zero and uncontrollable clauses (real: ~1,150)."""
CONDITION_CHARS = 400
"""When a conditional criterion applies."""
EXCLUSIVE_GROUP_CHARS = 40
"""Label of a mutually exclusive group (an identifier, not prose)."""
MAX_SUBGOALS = 18
"""Stated sub-goals of a task (one per criterion at most, as for criteria)."""
SUBGOAL_CHARS = 300
"""One stated sub-goal."""
MAX_CRITICAL_POINTS = 6
"""Irreversible steps named by the rubric."""
CRITICAL_POINT_CHARS = 300
"""One critical point."""
PERMISSION_QUOTE_CHARS = 300
"""The task's words granting permission to cross a critical point."""
PERMISSION_QUOTE_MIN_WORDS = 3
"""Fewest words of a permission quote that code accepts ("buy it" grants nothing; `verifier.guards`)."""
MAX_PERSONAL_DATA = 8
"""Items of personal data the task lacks."""
PERSONAL_DATA_CHARS = 80
"""One such item."""
MAX_UNDERSPECIFIED = 6
"""Choices the task leaves open."""
UNDERSPECIFIED_CHARS = 200
"""One such choice."""
SELF_AUDIT_CHARS = 1600
"""The rubric writer's self-audit."""

# ---- per-criterion replies -------------------------------------------------------------------
CRITERION_ID_CHARS = 8
"""A criterion id ("c1" .. "c999"; narrowed to an enum per call)."""
MAX_RELEVANCE_BATCH = 8
"""Screenshots scored per relevance call (`VerifierConfig.relevance_batch_size` <= this)."""
RELEVANCE_MAX = 10
"""Relevance scores run 0..this."""
EVIDENCE_TEXT_CHARS = 1700
"""Each of an evidence item's texts (what is visible, claims vs pixels, discrepancies) for one
screenshot (real: one screenshot's evidence text up to 820)."""
CONDITION_REASONING_CHARS = 800
"""Why a conditional criterion applies or not."""
JUSTIFICATION_CHARS = 1200
"""Why a criterion earned its points (action-only and rescoring)."""
REALITY_NOTE_CHARS = 1400
"""One criterion's reality note (real: up to 680)."""
MAX_CITED_SCREENSHOTS = 24
"""Screenshot numbers one field may cite."""
MAX_CITED_STEPS = 24
"""Step numbers one field may cite (a range of 12 steps was seen in real diagnoses)."""
SCREENSHOT_NUMBER_MAX = 10_000
"""Highest screenshot number a reply may name (numbers outside the run are dropped in code)."""
STEP_NUMBER_MAX = 10_000
"""Highest step number a reply may name (likewise)."""

# ---- side effects and outcome ----------------------------------------------------------------
MAX_PENALTIES = 6
"""Side-effect penalties one vote may report."""
PENALTY_POINTS_MAX = 3
"""A penalty's weight runs 1..this."""
PENALTY_NAME_CHARS = 350
"""A penalty's name (like a criterion name)."""
PENALTY_DESCRIPTION_CHARS = 800
"""What the side effect was."""
SIDE_EFFECTS_REASONING_CHARS = 1600
"""The side-effect call's reasoning."""
CRITICAL_POINT_REASONING_CHARS = 800
"""Why the critical point was (not) crossed."""
PRIMARY_INTENT_CHARS = 1200
"""The outcome's statement of the user's primary intent (real: up to 580)."""
OUTCOME_REASONING_CHARS = 3000
"""The outcome vote's reasoning."""
MAX_NITPICKS = 10
"""Nitpicks, and likewise critical issues, listed by one outcome vote."""
NITPICK_CHARS = 300
"""One nitpick or critical issue."""

# ---- diagnosis -------------------------------------------------------------------------------
MAX_FAILURE_POINTS = 60
"""Failure points of one diagnosis (real: up to 27)."""
STEP_SPEC_CHARS = 80
"""A failure point's steps written as text ("5", "6-17", "3, 5, 8-10"), accepted when a judge
without constrained decoding writes them so (the schema sends a list of numbers)."""
FAILURE_TEXT_CHARS = 800
"""A failure point's what-happened and evidence texts."""
DIAGNOSIS_REASONING_CHARS = 1600
"""The failure-point call's reasoning."""
VALIDITY_REASONING_CHARS = 1200
"""The task-ambiguity call's reasoning."""

#: The largest value of each measured quantity in the reference's 106 real outputs (issue 19):
#: bound name -> real maximum. Every bound listed must be at least twice its real maximum.
REAL_MAXIMA: dict[str, int] = {
    "MAX_CRITERIA": 9,
    "MAX_CRITERION_POINTS": 12,
    "CRITERION_NAME_CHARS": 167,
    "CRITERION_DESCRIPTION_CHARS": 1150,
    "REALITY_NOTE_CHARS": 680,
    "PRIMARY_INTENT_CHARS": 580,
    "EVIDENCE_TEXT_CHARS": 820,
    "MAX_FAILURE_POINTS": 27,
    "MAX_CITED_STEPS": 12,
    "STEP_SPEC_CHARS": len("6-17"),
}


def describe_chars(n: int, what: str = "") -> str:
    """A field description that tells the judge its limit, so constrained decoding does not cut a
    sentence it was still writing: the limit is in the text the judge reads with the schema."""
    return f"{what} At most {n} characters.".strip()


def all_limits() -> dict[str, int]:
    """Every named bound of this module (name -> value), for the docs table and its test."""
    return {k: v for k, v in globals().items() if k.isupper() and isinstance(v, int)}
