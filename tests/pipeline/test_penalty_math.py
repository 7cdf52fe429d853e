"""Penalty arithmetic, exhaustively: `dilute` (the default) is the reference's, `fraction` is the option.

The reference appends each penalty to the rubric as a criterion worth its points with 0 earned and
computes eq. 1 over everything (process score = E / (M + P)). `dilute` must equal that on every
rubric our contract admits the shape of: totals 1-27 (the real range is 6-27), earned in half points,
any mix of 1-3 point penalties (docs/limits.md, "Penalty arithmetic").
"""
from __future__ import annotations

import itertools

import pytest

from verifier.config import VerifierConfig
from verifier.scoring import CriterionPoints, apply_penalties, rubric_score

PENALTY_SETS = [list(c) for n in range(4) for c in itertools.combinations_with_replacement((1, 2, 3), n)]


def _reference(earned: float, total: int, penalties: list[int]) -> float:
    """The reference's arithmetic: penalties as extra zero-earned criteria, then eq. 1."""
    items = [CriterionPoints(max_points=total, earned=earned)]
    items += [CriterionPoints(max_points=p, earned=0.0) for p in penalties]
    return rubric_score(items)


def test_dilute_is_the_default():
    assert VerifierConfig().penalty_mode == "dilute"
    assert apply_penalties(0.5, [2], total_max=6) == apply_penalties(0.5, [2], total_max=6, mode="dilute")


@pytest.mark.parametrize("total", range(1, 28))
def test_dilute_equals_the_reference_on_every_total_earned_and_penalty_mix(total):
    for k in range(2 * total + 1):
        earned = k / 2
        before = rubric_score([CriterionPoints(max_points=total, earned=earned)])
        previous = before
        for pens in PENALTY_SETS:
            got = apply_penalties(before, pens, total_max=total)
            assert got == pytest.approx(_reference(earned, total, pens), abs=1e-12)
            assert got == pytest.approx(earned / (total + sum(pens)), abs=1e-12)
            assert 0.0 <= got <= before
            if not pens:
                assert got == before
        for more in range(1, 10):  # more penalty points never raise the score
            now = apply_penalties(before, [1] * more, total_max=total)
            assert now <= previous + 1e-15
            previous = now


def test_dilute_cost_depends_on_rubric_size_and_fraction_does_not():
    """The documented trade-off: a 3-point penalty on a perfect run."""
    small, big = (apply_penalties(1.0, [3], total_max=m) for m in (6, 27))
    assert small == pytest.approx(6 / 9) and big == pytest.approx(27 / 30)
    f_small, f_big = (apply_penalties(1.0, [3], total_max=m, mode="fraction") for m in (6, 27))
    assert f_small == f_big == pytest.approx(0.75)


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.25, 0.5, 1.0])
def test_fraction_mode_exhaustively(fraction):
    for k in range(21):
        score = k / 20
        for pens in PENALTY_SETS:
            got = apply_penalties(score, pens, total_max=10, mode="fraction", fraction=fraction)
            assert got == pytest.approx(score * max(0.0, 1 - fraction * sum(pens) / 3))
            assert 0.0 <= got <= score


@pytest.mark.parametrize("bad", [{"score": 1.01, "penalty_points": [1], "total_max": 10},
                                 {"score": -0.1, "penalty_points": [1], "total_max": 10},
                                 {"score": 0.5, "penalty_points": [1], "total_max": 0},
                                 {"score": 0.5, "penalty_points": [1], "total_max": -3}])
def test_bad_inputs_are_errors_not_scores(bad):
    with pytest.raises(ValueError):
        apply_penalties(**bad)


def test_negative_and_zero_penalties_cost_nothing():
    assert apply_penalties(0.6, [0, -2], total_max=10) == 0.6
