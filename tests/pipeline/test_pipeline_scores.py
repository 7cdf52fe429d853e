"""Pipeline behaviour with a scripted judge: conditions, penalties, overrides, votes."""
import pytest
from pipeline_helpers import make_traj, rescore, rubric_answer

from verifier.config import VerifierConfig
from verifier.errors import JudgeInvalidOutputError
from verifier.pipeline import verify
from verifier.result import RESULT_SCHEMA_VERSION, VerificationResult
from verifier.testing import ScriptedJudge

GROUPED = rubric_answer([
    {"name": "Find the mouse", "description": "full/partial/zero", "max_points": 6},
    {"name": "Buy organic", "description": "d", "max_points": 4, "condition": "organic is available",
     "exclusive_group": "g"},
    {"name": "Buy regular", "description": "d", "max_points": 4, "condition": "organic is unavailable",
     "exclusive_group": "g"},
])


def evidence_with_conditions(cond: dict[str, str]):
    return lambda m, o: {"items": [{"criterion_id": c, "visible": "v", "claims_check": "ok",
                                    "condition": cond.get(c)} for c in o.expected_ids]}


async def test_unmet_conditional_criteria_leave_both_sums():
    judge = ScriptedJudge({"rubric": GROUPED,
                           "evidence": evidence_with_conditions({"c2": "not_met", "c3": "met"}),
                           "rescoring": rescore({"c1": 6, "c3": 2})})
    res = await verify(make_traj(3), judge=judge)
    assert res.process_score == pytest.approx(8 / 10)  # not 8/14
    assert res.process_success is True
    assert judge.requests_for("conditions") == []  # determinate: decided in code
    assert judge.requests_for("rescoring")[0].output_model.expected_ids == ("c1", "c3")
    table = {c.id: c for c in res.criteria}
    assert (table["c2"].condition_status, table["c2"].applies, table["c2"].earned) == ("not_met", False, 0.0)
    assert (table["c3"].condition_status, table["c3"].condition_source) == ("met", "evidence")
    assert table["c1"].condition_status == "unconditional"


async def test_indeterminate_conditions_ask_the_judge_once():
    judge = ScriptedJudge({"rubric": GROUPED,
                           "conditions": lambda m, o: {"items": [
                               {"criterion_id": c, "reasoning": "r", "applies": c == "c3"} for c in o.expected_ids]},
                           "rescoring": rescore({"c1": 6, "c3": 4})})
    res = await verify(make_traj(2), judge=judge)
    assert len(judge.requests_for("conditions")) == 1
    assert judge.requests_for("conditions")[0].output_model.expected_ids == ("c2", "c3")
    table = {c.id: c for c in res.criteria}
    assert (table["c2"].applies, table["c3"].applies, table["c3"].condition_source) == (False, True, "judge")
    assert res.process_score == 1.0


async def test_condition_judge_failure_degrades_to_primary_alternative():
    judge = ScriptedJudge({"rubric": GROUPED, "conditions": JudgeInvalidOutputError("bad", stage="conditions")})
    res = await verify(make_traj(2), judge=judge)
    table = {c.id: c for c in res.criteria}
    assert (table["c2"].applies, table["c3"].applies) == (True, False)
    assert table["c2"].condition_source == "default"
    assert [d.stage for d in res.degraded] == ["conditions"]


@pytest.mark.parametrize("effects,reason", [
    ({"reasoning": "added a warranty", "penalties": [{"name": "warranty added", "description": "d", "points": 3,
                                                       "steps": [2, 99], "screenshots": [3, 40]}]},
     "unsolicited side effect: warranty added"),
    ({"reasoning": "paid", "critical_point_violation": True, "critical_point_reasoning": "placed the order",
      "critical_point_screenshots": [3]},
     "critical point crossed without permission"),
])
async def test_side_effects_force_outcome_failure(effects, reason):
    judge = ScriptedJudge({"side_effects": effects})
    res = await verify(make_traj(3), judge=judge)
    assert res.outcome_votes == [True]  # the judge voted success ...
    assert res.outcome_success is False  # ... but code forces failure
    assert [f.split(" (screenshots")[0] for f in res.forced_failure] == [reason]
    if effects.get("penalties"):
        assert res.process_score_before_penalties == 1.0
        assert res.process_score == pytest.approx(10 / 13)  # dilute (the default): 10 / (10 + 3)
        assert res.process_success is False
        assert (res.penalties[0].steps, res.penalties[0].screenshots) == ([2], [3])  # outside the run: dropped
    else:
        assert res.critical_point_violation and res.process_score == 1.0


async def test_penalty_modes_dilute_by_default_and_fraction_on_request():
    judge = ScriptedJudge({"side_effects": {"reasoning": "r", "penalties": [
        {"name": "cart", "description": "d", "points": 2, "screenshots": [2]}]}})
    res = await verify(make_traj(2), judge=judge)
    assert res.config["penalty_mode"] == "dilute" and res.process_score == pytest.approx(10 / 12)
    res = await verify(make_traj(2), VerifierConfig(penalty_mode="fraction"), judge=judge)
    assert res.process_score == pytest.approx(1 - 0.25 * 2 / 3)


async def test_screenshot_evidence_overrides_action_only_scores():
    judge = ScriptedJudge({"rescoring": rescore({"c1": 0, "c2": 4}, tag="contradiction")})
    res = await verify(make_traj(3), judge=judge)
    assert res.action_only_score == 1.0  # the actions/claims alone look perfect
    assert res.process_score == pytest.approx(0.4)  # the pixels say otherwise, and win
    assert res.hallucination_suspected is True
    c1 = res.criteria[0]
    assert (c1.action_only_earned, c1.earned, c1.evidence_tag, c1.hallucination_suspected) == (6, 0, "contradiction", True)
    assert res.criteria[1].hallucination_suspected is False
    rescoring_text = judge.text(judge.requests_for("rescoring")[0])
    assert "Action-only scores" in rescoring_text and "[c1] 6/6" in rescoring_text


async def test_earned_points_are_clamped_to_max():
    judge = ScriptedJudge({"rescoring": rescore({"c1": 9, "c2": 10})})  # max 6 and 4
    res = await verify(make_traj(2), judge=judge)
    assert [c.earned for c in res.criteria] == [6, 4] and res.process_score == 1.0


async def test_median_over_votes_and_majority_outcome():
    earned = iter([{"c1": 6, "c2": 4}, {"c1": 0, "c2": 2}, {"c1": 3, "c2": 3}])  # 1.0, 0.2, 0.6
    votes = iter([{"primary_intent": "p", "reasoning": "no", "success": False},
                  JudgeInvalidOutputError("garbage", stage="outcome"),
                  {"primary_intent": "p", "reasoning": "no", "success": False}])
    judge = ScriptedJudge({"rescoring": lambda m, o: rescore(next(earned))(m, o),
                           "outcome": lambda m, o: next(votes)})
    res = await verify(make_traj(2), VerifierConfig(votes=3), judge=judge)
    assert sorted(res.rescoring_scores) == pytest.approx([0.2, 0.6, 1.0])
    assert res.process_score == pytest.approx(0.6)
    assert [c.earned for c in res.criteria] == [3, 3]  # the median run's table
    assert res.outcome_votes == [False, None, False]
    assert res.outcome_success is False  # 2 of 3 no decide it; 1-1 with an invalid vote is unscored (test_scoring)
    assert res.outcome_reasoning == "no"
    assert [d.stage for d in res.degraded] == ["outcome"]
    seeds = {r.sampling.seed for r in judge.requests_for("outcome")}
    assert len(seeds) == 3  # independent votes


async def test_two_valid_of_three_votes_win():
    votes = iter([True, True, JudgeInvalidOutputError("x", stage="outcome")])

    def vote(m, o):
        v = next(votes)
        return v if isinstance(v, Exception) else {"primary_intent": "p", "reasoning": "r", "success": v}
    res = await verify(make_traj(2), VerifierConfig(votes=3), judge=ScriptedJudge({"outcome": vote}))
    assert res.outcome_success is True


async def test_result_is_json_round_trippable(traj4):
    res = await verify(traj4, judge=ScriptedJudge())
    again = VerificationResult.model_validate_json(res.model_dump_json())
    assert again == res
    assert res.schema_version == RESULT_SCHEMA_VERSION and res.models == ["scripted-judge"]
    assert {"rubric", "context", "principles.untrusted", "outcome"} <= {p.id for p in res.prompts}
    assert all(len(p.sha256) == 64 for p in res.prompts)


async def test_forced_failure_is_explained_in_the_reasoning():
    judge = ScriptedJudge({"side_effects": {"reasoning": "r", "penalties": [
        {"name": "newsletter sign-up", "description": "d", "points": 1, "screenshots": [2]}]}})
    res = await verify(make_traj(2), judge=judge)
    assert res.outcome_reasoning.startswith("[forced failure: unsolicited side effect: newsletter sign-up "
                                            "(screenshots 2)]")


async def test_bugs_are_not_swallowed_as_degradation():
    def broken(m, o):
        raise RuntimeError("bug in a stage")
    with pytest.raises(RuntimeError):
        await verify(make_traj(2), judge=ScriptedJudge({"evidence": broken}))


def test_verify_sync_and_vote_sampling_keeps_judge_max_tokens():
    from verifier.judge.base import Sampling
    from verifier.pipeline import verify_sync

    judge = ScriptedJudge()
    judge.config = type("Cfg", (), {"sampling": Sampling(max_tokens=7777)})()
    res = verify_sync(make_traj(2), VerifierConfig(votes=3), judge=judge)
    assert res.outcome_success is True and len(res.outcome_votes) == 3
    s = judge.requests_for("rescoring")[0].sampling
    assert (s.max_tokens, s.temperature) == (7777, 0.7)
    assert judge.requests_for("rubric")[0].sampling is None  # single calls keep the judge's own sampling


def _runs(*earned: dict[str, int]):
    """Scripted rescoring runs in call order; run i's justifications say `run{i}`."""
    it = iter(enumerate(earned))

    def answer(m, o):
        i, e = next(it)
        if isinstance(e, Exception):
            return e
        return {"items": [{"criterion_id": c, "evidence_tag": "consistent", "credit_basis": "evidence",
                           "justification": f"run{i}", "earned": e[c]} for c in o.expected_ids]}
    return answer


async def test_process_tie_between_valid_runs_never_passes():
    # One of three runs fails: 0.9 and 0.7 remain. Their mean (0.8) would pass; a tie must not.
    judge = ScriptedJudge({"rescoring": _runs({"c1": 6, "c2": 3}, JudgeInvalidOutputError("x", stage="rescoring"),
                                              {"c1": 4, "c2": 3})})
    res = await verify(make_traj(2), VerifierConfig(votes=3), judge=judge)
    assert sorted(res.rescoring_scores) == pytest.approx([0.7, 0.9])
    assert res.process_score == pytest.approx(0.7) and res.process_success is False
    assert [c.earned for c in res.criteria] == [4, 3]  # the table is the run the score came from
    assert [d.stage for d in res.degraded] == ["rescoring_run"]  # a weaker median, not the fallback


async def test_per_criterion_median_across_runs():
    runs = ({"c1": 6, "c2": 0}, {"c1": 0, "c2": 4}, {"c1": 6, "c2": 4})  # run scores 0.6, 0.4, 1.0
    by_run = await verify(make_traj(2), VerifierConfig(votes=3), judge=ScriptedJudge({"rescoring": _runs(*runs)}))
    assert by_run.process_score == pytest.approx(0.6)  # the median run, whole
    assert [(c.earned, c.justification) for c in by_run.criteria] == [(6, "run0"), (0, "run0")]
    res = await verify(make_traj(2), VerifierConfig(votes=3, rescoring_median="criterion"),
                       judge=ScriptedJudge({"rescoring": _runs(*runs)}))
    assert sorted(res.rescoring_scores) == pytest.approx([0.4, 0.6, 1.0])
    assert res.process_score == pytest.approx(1.0)  # c1: median(6, 0, 6) = 6; c2: median(0, 4, 4) = 4
    assert [(c.earned, c.justification) for c in res.criteria] == [(6, "run0"), (4, "run1")]


async def test_no_applicable_criterion_degrades_instead_of_failing():
    # A weak judge's rubric: only standalone conditionals (a one-member group passes the draft check),
    # and the evidence says no condition holds. Seen with the random-weight engine-tier model.
    lonely = rubric_answer([{"name": "a", "description": "d", "max_points": 6, "condition": "x",
                             "exclusive_group": "alone"},
                            {"name": "b", "description": "d", "max_points": 4, "condition": "y"}])
    judge = ScriptedJudge({"rubric": lonely, "evidence": evidence_with_conditions({"c1": "not_met", "c2": "not_met"}),
                           "rescoring": rescore({"c1": 3, "c2": 4})})
    res = await verify(make_traj(2), judge=judge)
    assert [(c.applies, c.condition_source) for c in res.criteria] == [(True, "default"), (True, "default")]
    assert res.process_score == pytest.approx(7 / 10)
    assert [d.stage for d in res.degraded] == ["conditions"]
    assert judge.requests_for("rescoring")[0].output_model.expected_ids == ("c1", "c2")
