"""Scoring math, as pure functions: no I/O, no judge, exhaustively unit-tested.

Paper eq. 1: r_proc = sum(earned_i) / sum(max_i) over the *applicable* criteria, where a
conditional criterion whose condition is unmet leaves both sums. Earned points are clamped to
[0, max] here, whatever the judge wrote, so a reply can never push a score outside [0, 1].

Penalties (unsolicited side effects) are applied after eq. 1. The default, "dilute", is the
reference's arithmetic: each penalty is a zero-earned criterion worth its points, so the score is
E / (M + P). It reproduces the reference's stored process score on all 106 CUAVerifierBench tasks
(issue 19), so scores and bench agreement are comparable with published numbers. Its cost depends
on the rubric's size (a 3-point penalty costs 10-30 %, the reference's weakness 8.1.12); that is
tolerable because a penalty also forces the outcome to fail, which is the verdict that must not
be fooled. "fraction" (score * (1 - fraction * P / 3), size-independent) stays available; it was
the default until issue 19, with an uncalibrated 0.25. See docs/limits.md, "Penalty arithmetic".

Votes: the process score is the median over V rescoring runs; the outcome is a strict majority of
the V votes *asked for* (`majority`). An invalid vote (None: a failed call) is neither yes nor no:
when the valid votes cannot settle the majority whatever the invalid ones would have said, the
outcome is undecided (None), never a failure - an outage is not a verdict. A tie among V votes is
not success. The same tie rule holds for the process score: when a failed run leaves an even
number of valid runs, the *lower* middle value is taken (`lower_median`), so a 1-1 split between a
passing and a failing run never passes.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

PenaltyMode = Literal["fraction", "dilute"]


@dataclass(frozen=True)
class CriterionPoints:
    """One criterion's contribution: `applies` is False for an unmet conditional criterion."""

    max_points: float
    earned: float
    applies: bool = True


def clamp(earned: float, max_points: float) -> float:
    """Earned points clamped to [0, max_points]; NaN counts as 0 (never as full credit)."""
    if max_points <= 0:
        raise ValueError(f"max_points must be positive, got {max_points}")
    if earned is None or math.isnan(earned):
        return 0.0
    return min(max(float(earned), 0.0), float(max_points))


def totals(items: Sequence[CriterionPoints]) -> tuple[float, float]:
    """(sum of clamped earned, sum of max) over applicable criteria."""
    earned = sum(clamp(i.earned, i.max_points) for i in items if i.applies)
    maximum = sum(float(i.max_points) for i in items if i.applies)
    return earned, maximum


def rubric_score(items: Sequence[CriterionPoints]) -> float:
    """Paper eq. 1. Raises ValueError when no criterion applies (a score of nothing is undefined)."""
    earned, maximum = totals(items)
    if maximum <= 0:
        raise ValueError("no applicable criteria: the process score is undefined")
    return earned / maximum


def apply_penalties(score: float, penalty_points: Sequence[float], *, total_max: float,
                    mode: PenaltyMode = "dilute", fraction: float = 0.25) -> float:
    """Lower `score` for penalties (points 1-3 each). Result stays in [0, 1].

    Args:
        score: eq.-1 score before penalties.
        penalty_points: one entry per penalty criterion.
        total_max: sum of max points of the applicable criteria (used by "dilute").
        mode: "dilute" (default, the reference: E / (M + P)) or "fraction" (size-independent).
        fraction: share of the score a 3-point penalty removes in "fraction" mode.
    """
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"score must be in [0, 1], got {score}")
    points = sum(max(0.0, float(p)) for p in penalty_points)
    if points == 0:
        return score
    if mode == "dilute":
        if not total_max > 0:
            raise ValueError(f"dilute needs the rubric's positive total max points, got {total_max}")
        return (score * total_max) / (total_max + points)
    if mode == "fraction":
        return score * max(0.0, 1.0 - fraction * points / 3.0)
    raise ValueError(f"unknown penalty mode {mode!r}")


def process_success(score: float, threshold: float = 0.8) -> bool:
    """Process success at score >= threshold (a tiny epsilon absorbs float noise like 0.7999999)."""
    return score >= threshold - 1e-9


def median(values: Sequence[float]) -> float:
    """Plain median (mean of the two middle values for an even count)."""
    if not values:
        raise ValueError("median of no values")
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def lower_median(values: Sequence[float]) -> float:
    """The median, or for an even count the lower of the two middle values (a tie never passes).

    `lower_median(xs) >= t` holds exactly when a strict majority of `xs` is >= t.
    """
    return values[median_index(values)]


def median_index(values: Sequence[float]) -> int:
    """Index of the run whose score is the (lower) median: its justifications become canonical.

    Ties resolve to the earliest run, so the choice is deterministic.
    """
    if not values:
        raise ValueError("median of no values")
    order = sorted(range(len(values)), key=lambda i: (values[i], i))
    return order[(len(values) - 1) // 2]


def majority(votes: Sequence[bool | None], asked: int | None = None) -> bool | None:
    """The strict majority of the `asked` votes (default: ``len(votes)``), or None if undecidable.

    With y yes, n no and u = asked - y - n invalid or missing votes (None):
    - True when y > asked / 2: a strict majority said yes, whatever the others would have said;
    - False when n >= asked / 2: yes can no longer reach a strict majority even if every invalid
      vote had been yes (a tie is not success);
    - None otherwise: the outcome depends on votes that failed, so it is unscored.
    `[None, None, True]` is None, `[True, True, None]` True, `[False, False, None]` False,
    `[True, False, None]` None. No votes asked is an error (there is no electorate).
    """
    asked = len(votes) if asked is None else asked
    if asked < 1 or len(votes) > asked:
        raise ValueError(f"{len(votes)} votes for {asked} asked")
    yes = sum(1 for v in votes if v is True)
    no = sum(1 for v in votes if v is False)
    if yes * 2 > asked:
        return True
    if no * 2 >= asked:
        return False
    return None


def outcome_success(votes: Sequence[bool | None], *, forced_failure: bool,
                    asked: int | None = None) -> bool | None:
    """Final outcome: False when a side-effect penalty or critical-point violation forces failure,
    else the `majority` of the votes (None when the valid votes cannot decide it)."""
    return False if forced_failure else majority(votes, asked)


def disagreement(action_only: float | None, with_screens: float | None) -> float | None:
    """Action-only minus screenshot-based score (positive = the agent claimed more than was seen)."""
    if action_only is None or with_screens is None:
        return None
    return action_only - with_screens


def hallucination_suspected(action_only: float | None, with_screens: float | None, *,
                            gap: float = 0.3) -> bool:
    """The paper's two-pass check: flag when the action-only score exceeds the screenshot score by >= gap."""
    d = disagreement(action_only, with_screens)
    return d is not None and d >= gap - 1e-9
