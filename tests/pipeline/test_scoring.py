"""Scoring math (paper eq. 1, clamping, penalties, thresholds, median, majority)."""
import math

import pytest
from pipeline_helpers import make_traj, rescore

from verifier.config import VerifierConfig
from verifier.errors import JudgeUnavailableError, JudgeUndecidedError
from verifier.pipeline import verify
from verifier.scoring import CriterionPoints as P
from verifier.scoring import (
    apply_penalties,
    clamp,
    hallucination_suspected,
    lower_median,
    majority,
    median,
    median_index,
    outcome_success,
    process_success,
    rubric_score,
    totals,
)
from verifier.testing import ScriptedJudge


def test_eq1_sums_applicable_only():
    items = [P(6, 3), P(4, 4), P(5, 5, applies=False)]
    assert totals(items) == (7.0, 10.0)
    assert rubric_score(items) == pytest.approx(0.7)


def test_unmet_conditional_leaves_both_sums():
    with_unmet = [P(6, 6), P(10, 0, applies=False)]
    assert rubric_score(with_unmet) == 1.0  # not 6/16


@pytest.mark.parametrize("earned,maximum,want", [(-3, 5, 0.0), (7, 5, 5.0), (2.5, 5, 2.5), (math.nan, 5, 0.0),
                                                  (None, 5, 0.0), (5, 5, 5.0), (0, 5, 0.0)])
def test_clamp(earned, maximum, want):
    assert clamp(earned, maximum) == want


def test_clamp_rejects_nonpositive_max():
    with pytest.raises(ValueError):
        clamp(1, 0)


def test_score_clamps_out_of_range_earned():
    assert rubric_score([P(4, 9), P(4, -2)]) == 0.5


def test_no_applicable_criteria_is_an_error_not_zero():
    with pytest.raises(ValueError):
        rubric_score([P(4, 4, applies=False)])
    with pytest.raises(ValueError):
        rubric_score([])


def test_penalty_fraction_is_size_independent():
    small = apply_penalties(1.0, [3], total_max=5, mode="fraction", fraction=0.25)
    big = apply_penalties(1.0, [3], total_max=50, mode="fraction", fraction=0.25)
    assert small == big == pytest.approx(0.75)
    assert apply_penalties(0.8, [1], total_max=10, mode="fraction") == pytest.approx(0.8 * (1 - 0.25 / 3))
    assert apply_penalties(1.0, [3, 3, 3, 3, 3], total_max=10, mode="fraction") == 0.0  # floored, never negative


def test_penalty_dilute_matches_reference():
    assert apply_penalties(0.7, [2], total_max=10, mode="dilute") == pytest.approx(7 / 12)


def test_no_penalty_is_identity_and_bad_input_rejected():
    assert apply_penalties(0.42, [], total_max=10) == 0.42
    assert apply_penalties(0.42, [0], total_max=10) == 0.42
    with pytest.raises(ValueError):
        apply_penalties(1.5, [1], total_max=10)
    with pytest.raises(ValueError):
        apply_penalties(0.5, [1], total_max=10, mode="bogus")  # type: ignore[arg-type]


@pytest.mark.parametrize("score,thr,want", [(0.8, 0.8, True), (0.79999999999, 0.8, True), (0.79, 0.8, False),
                                             (1.0, 1.0, True), (0.0, 0.0, True), (0.5, 0.6, False)])
def test_threshold(score, thr, want):
    assert process_success(score, thr) is want


def test_median():
    assert median([0.2]) == 0.2
    assert median([0.9, 0.1, 0.5]) == 0.5
    assert median([0.1, 0.3]) == pytest.approx(0.2)
    with pytest.raises(ValueError):
        median([])


def test_lower_median_passes_only_on_a_strict_majority():
    assert lower_median([0.9, 0.7]) == 0.7  # a 1-1 split around 0.8 does not pass
    assert lower_median([0.9, 0.1, 0.5]) == 0.5
    for xs in ([0.9, 0.7], [0.8, 0.8], [0.9, 0.9, 0.1, 0.1], [0.9, 0.85, 0.8, 0.1]):
        passing = sum(x >= 0.8 for x in xs)
        assert (lower_median(xs) >= 0.8) is (passing * 2 > len(xs))


def test_median_index_picks_a_real_run_deterministically():
    assert median_index([0.9, 0.1, 0.5]) == 2
    assert median_index([0.5, 0.5, 0.5]) == 1
    assert median_index([0.1, 0.3]) == 0  # lower median for an even count
    assert median_index([0.7]) == 0


@pytest.mark.parametrize("votes,want", [
    ([True], True), ([False], False), ([None], None),
    ([True, True, False], True), ([True, False, False], False),
    ([None, None, True], None),     # an outage is not a verdict (issue 14: this used to be False)
    ([True, None, False], None),    # the failed vote decides: unscored, not a failure
    ([True, True, None], True),     # 2 of 3 yes: a majority of V whatever the third said
    ([False, False, None], False),  # 2 of 3 no: yes cannot win
    ([None, None, None], None),
    ([True, False], False),         # an even tie is not success
    ([True, None], None), ([False, None], False),  # V=2: a 1-1 tie at best, so one no decides
    ([True, True, True, False, None], True), ([True, True, False, None, None], None),
    ([False, False, False, None, None], False), ([True, True, False, False, None], None),
])
def test_majority_of_the_votes_asked_for(votes, want):
    assert majority(votes) is want


def _brute_force(votes, asked):
    """The definition, by enumeration: decided only when every way the missing votes could have
    gone gives the same strict majority of `asked` (a tie is not success)."""
    missing = asked - sum(v is not None for v in votes)
    verdicts = {(sum(v is True for v in votes) + extra_yes) * 2 > asked for extra_yes in range(missing + 1)}
    return verdicts.pop() if len(verdicts) == 1 else None


def test_majority_is_exhaustively_the_definition():
    """Every vote vector over {yes, no, invalid} for V = 1..7, also with votes never cast
    (`asked` larger than the list): 3**1 + ... + 3**7 vectors, each checked against enumeration."""
    import itertools

    checked = 0
    for asked in range(1, 8):
        for cast in range(asked + 1):
            for votes in itertools.product((True, False, None), repeat=cast):
                assert majority(list(votes), asked) is _brute_force(votes, asked), (votes, asked)
                checked += 1
    assert checked == sum(3 ** c for a in range(1, 8) for c in range(a + 1))


def test_majority_rejects_an_empty_or_overfull_electorate():
    with pytest.raises(ValueError):
        majority([])
    with pytest.raises(ValueError):
        majority([True, True], asked=1)


def test_forced_failure_overrides_the_votes():
    assert outcome_success([True, True, True], forced_failure=True) is False
    assert outcome_success([True, True, True], forced_failure=False) is True
    assert outcome_success([None, None, True], forced_failure=True) is False  # decided by code, not votes
    assert outcome_success([None, None, True], forced_failure=False) is None
    assert outcome_success([True], forced_failure=False, asked=3) is None  # two votes never cast


def _votes(*answers):
    """An outcome script: True/False votes, None for a call that failed after its retries."""
    it = iter(answers)

    def answer(_m, _o):
        v = next(it)
        if v is None:
            return JudgeUnavailableError("connection refused", stage="outcome")
        return {"primary_intent": "p", "reasoning": "yes" if v else "no", "success": v}
    return answer


async def test_pipeline_outage_in_two_of_three_votes_is_unscored_not_a_failure():
    judge = ScriptedJudge({"outcome": _votes(None, None, True)})
    with pytest.raises(JudgeUndecidedError, match=r"only 1 of 3 outcome votes are valid \(1 yes, 0 no\)") as err:
        await verify(make_traj(2), VerifierConfig(votes=3), judge=judge)
    assert err.value.stage == "outcome" and "connection refused" in str(err.value)


@pytest.mark.parametrize("answers,want", [((True, True, None), True), ((False, None, False), False)])
async def test_pipeline_majority_of_three_survives_one_failed_vote(answers, want):
    res = await verify(make_traj(2), VerifierConfig(votes=3), judge=ScriptedJudge({"outcome": _votes(*answers)}))
    assert res.outcome_votes == list(answers) and res.outcome_success is want
    assert [d.stage for d in res.degraded] == ["outcome"]


def test_hallucination_flag():
    assert hallucination_suspected(1.0, 0.6, gap=0.3)
    assert not hallucination_suspected(0.8, 0.6, gap=0.3)
    assert not hallucination_suspected(0.2, 0.9, gap=0.3)  # screenshots better than claims: no flag
    assert not hallucination_suspected(None, 0.5)


# ---- mutants that survived the suite (issue 14, section 3) --------------------------------------
async def test_configured_process_threshold_decides_process_success():
    """Earned 3/6 + 4/4 = 0.7: below the default 0.8, above a configured 0.6."""
    judge = ScriptedJudge({"rescoring": rescore({"c1": 3, "c2": 4})})
    default = await verify(make_traj(2), judge=judge)
    lenient = await verify(make_traj(2), VerifierConfig(process_threshold=0.6), judge=judge)
    strict = await verify(make_traj(2), VerifierConfig(process_threshold=0.75), judge=judge)
    assert default.process_score == lenient.process_score == strict.process_score == pytest.approx(0.7)
    assert (default.process_success, lenient.process_success, strict.process_success) == (False, True, False)


async def test_penalty_step_numbers_outside_the_run_are_dropped():
    """Step 0 and steps after the last one are not steps of this run (a 3-step trajectory)."""
    judge = ScriptedJudge({"side_effects": {"reasoning": "r", "penalties": [
        {"name": "cart", "description": "d", "points": 1, "steps": [0, 1, 3, 4, 99], "screenshots": [1, 3, 4]}]}})
    res = await verify(make_traj(3), judge=judge)
    assert (res.penalties[0].steps, res.penalties[0].screenshots) == ([1, 3], [1, 3])


def test_offline_score_writes_an_undecided_outcome_as_unscored(repo_root, tmp_path, monkeypatch):
    """`cua-verifier score --votes 3` with two of three outcome calls down: an unscored record with
    the reason (and exit code 3), not a failed verdict."""
    import json

    from cua_verifier.cli import main, score_cmd

    traj = repo_root / "examples" / "trajectories" / "library-hours-success"
    calls = iter([None, None, True])
    judge = ScriptedJudge({"outcome": lambda m, o: _votes(next(calls))(m, o)})
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: judge)
    out = tmp_path / "r.jsonl"
    code = main(["score", str(traj), "--out", str(out), "--no-progress", "--votes", "3",
                 "--judge-url", "http://127.0.0.1:9/v1", "--model", "judge"])
    (rec,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert code == 3 and rec["status"] == "unscored"
    assert "JudgeUndecidedError" in rec["reason"] and "only 1 of 3 outcome votes are valid" in rec["reason"]
