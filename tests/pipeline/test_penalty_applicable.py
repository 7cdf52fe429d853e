"""Penalties dilute over the *applicable* criteria only (issue 38 §10).

With a criterion whose condition does not hold, summing every criterion's max points instead of
the applicable ones' made a 3-point penalty cost less (10/10 -> 0.824 instead of 0.769) and
flipped process success at the 0.8 threshold; no test noticed.
"""
import pytest
from pipeline_helpers import make_traj, rescore
from test_pipeline_scores import GROUPED, evidence_with_conditions

from verifier.pipeline import verify
from verifier.testing import ScriptedJudge


async def test_a_penalty_dilutes_over_the_applicable_criteria_only():
    judge = ScriptedJudge({"rubric": GROUPED,  # c2 (4 points) does not apply: 10 applicable points
                           "evidence": evidence_with_conditions({"c2": "not_met", "c3": "met"}),
                           "rescoring": rescore({"c1": 6, "c3": 4}),
                           "side_effects": {"reasoning": "added a warranty", "penalties": [
                               {"name": "warranty added", "description": "d", "points": 3, "steps": [1],
                                "screenshots": [1]}]}})
    res = await verify(make_traj(3), judge=judge)
    assert [c.applies for c in res.criteria] == [True, False, True]
    assert res.process_score_before_penalties == 1.0
    assert res.process_score == pytest.approx(10 / (10 + 3))  # not 14 / (14 + 3) = 0.824
    assert res.process_success is False  # 0.769 < 0.8: the penalty is not diluted by c2's points
