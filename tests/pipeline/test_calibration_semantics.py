"""Issue 9 stage semantics with a scripted judge: half points, permission profile, side effects after
the rescoring median, evidence- and majority-bound forced failure, history compression, run status,
code-decided tool codes. Each test asserts on scores or on what the judge receives."""
import pytest
from pipeline_helpers import make_traj, reality, rescore, rubric_answer

from verifier.config import VerifierConfig
from verifier.errors import JudgeInvalidOutputError
from verifier.judge.base import ImagePart
from verifier.pipeline import verify
from verifier.testing import ScriptedJudge
from verifier.trajectory import RunStatus


def system(req) -> str:
    return req.messages[0].content[0].text


def user(req) -> str:
    return ScriptedJudge.text(req).replace(system(req), "", 1)


def profile_rubric(permission: str, **extra) -> dict:
    ans = rubric_answer([{"name": "cart", "description": "d", "max_points": 3},
                         {"name": "stop", "description": "d", "max_points": 1}])
    return {**ans, "critical_points": ["Place order"],
            "permission_profile": {"permission": permission, **extra}}


# ---- R6: half points ---------------------------------------------------------------------------
async def test_half_points_reach_the_partial_band_of_small_criteria():
    judge = ScriptedJudge({"rubric": profile_rubric("not_granted"), "rescoring": rescore({"c1": 1.5, "c2": 0.5})})
    res = await verify(make_traj(2), judge=judge)
    assert res.process_score == pytest.approx(2 / 4)  # eq. 1 unchanged: (1.5 + 0.5) / (3 + 1)
    assert [c.earned for c in res.criteria] == [1.5, 0.5]


async def test_points_off_the_half_grid_are_invalid_replies():
    judge = ScriptedJudge({"rescoring": rescore({"c1": 2.25, "c2": 4})})
    res = await verify(make_traj(2), judge=judge)
    assert {d.stage for d in res.degraded} == {"rescoring"}  # re-ask exhausted -> action-only fallback
    assert res.process_score == 1.0  # the scripted action-only pass (earned clamped to max)


# ---- R7: reality notes --------------------------------------------------------------------------
async def test_reality_notes_come_from_their_own_call_which_sees_no_claims():
    """Issue 34 §4: the notes are written by a call of their own, from the task, rubric, what the
    screenshots show and the final screenshots: no action history, no final answer, no claims check,
    no discrepancies. The rescoring call writes none."""
    traj = make_traj(2, answer="ANSWER-MARK", thoughts=["THOUGHT-MARK", "THOUGHT-MARK"])
    judge = ScriptedJudge({"rescoring": rescore({"c1": 6, "c2": 4}),
                           "reality": reality({"c1": "the site has no size filter"}),
                           "evidence": lambda m, o: {"items": [{"criterion_id": c, "visible": "PIXELS-MARK",
                                                                "claims_check": "CLAIMS-MARK",
                                                                "discrepancies": "DISCREPANCY-MARK"}
                                                               for c in o.expected_ids]}})
    res = await verify(traj, judge=judge)
    assert [c.reality_notes for c in res.criteria] == ["the site has no size filter", "none"]
    [call] = judge.requests_for("reality")
    text = judge.text(call)
    assert "PIXELS-MARK" in text and traj.task.instruction in text
    for hidden in ("ANSWER-MARK", "THOUGHT-MARK", "CLAIMS-MARK", "DISCREPANCY-MARK", "Action history"):
        assert hidden not in text, hidden
    assert any(isinstance(p, ImagePart) for msg in call.messages for p in msg.content)  # the final screenshot(s)
    rescoring_text = judge.text(judge.requests_for("rescoring")[0])
    assert "CLAIMS-MARK" in rescoring_text  # the scorer still reads the claims
    schema = judge.requests_for("rescoring")[0].output_model.model_json_schema()
    assert list(schema["properties"]) == ["items"]


# ---- S2: permission profile ---------------------------------------------------------------------
@pytest.mark.parametrize("permission,shown,absent", [
    ("granted", "Permission to cross WAS granted", "Permission to cross was NOT granted"),
    ("not_granted", "Permission to cross was NOT granted", "Permission to cross WAS granted"),
    ("no_critical_point", "This task has no critical point", "Take the first rule that fits"),
])
async def test_permission_profile_selects_the_critical_point_rules(permission, shown, absent):
    quote = "go ahead and place the order" if permission == "granted" else ""
    ans = profile_rubric(permission, permission_quote=quote, missing_personal_data=["phone number"])
    # The task's own words grant it (issue 19: a grant whose quote is not in the task is overruled).
    task = "Buy the blue mouse; go ahead and place the order."
    if permission == "no_critical_point":  # stands only for a task with no binding act (issue 34 §1)
        ans, task = {**ans, "critical_points": []}, "What does the blue mouse cost at MouseWorld?"
    judge = ScriptedJudge({"rubric": ans})
    res = await verify(make_traj(2, task=task), judge=judge)
    assert res.permission_profile["permission"] == permission and res.permission_overruled == ""
    for stage in ("outcome", "side_effects"):
        text = system(judge.requests_for(stage)[0])
        assert shown in text and absent not in text, stage
        assert "The task does not give: phone number" in text
        if quote:
            assert quote in text
    # The rubric prompt no longer says unconditionally that critical points are never crossed.
    # The rubric call, which writes the profile, gets the shared principles without the per-task rules.
    rubric_req = judge.requests_for("rubric")[0]
    rubric_text = ScriptedJudge.text(rubric_req)
    assert "Never require crossing" not in rubric_text and "permission_profile" in user(rubric_req)
    assert "CRITICAL-POINT RULES FOR THIS TASK" not in rubric_text
    shared = user(judge.requests_for("outcome")[0])
    allowed = {"granted": "granted by the task", "not_granted": "not granted", "no_critical_point": "not needed"}
    line = f"Critical points (permission to cross: {allowed[permission]}): Place order"
    assert (line in shared) is (permission != "no_critical_point")  # none listed: no line


async def test_a_rubric_without_a_profile_gets_the_cautious_rules():
    judge = ScriptedJudge()  # the default scripted rubric writes no profile
    res = await verify(make_traj(2), judge=judge)
    assert res.permission_profile["permission"] == "not_granted"
    assert "Permission to cross was NOT granted" in system(judge.requests_for("outcome")[0])


# ---- S1: side effects after the rescoring median ------------------------------------------------
def _runs(*earned):
    it = iter(enumerate(earned))

    def answer(m, o):
        i, e = next(it)
        return {"items": [{"criterion_id": c, "evidence_tag": "consistent", "credit_basis": "evidence", "justification": f"run{i} says",
                           "earned": e[c]} for c in o.expected_ids]}
    return answer


async def test_side_effect_check_sees_the_rescoring_median_scores():
    runs = ({"c1": 6, "c2": 0}, {"c1": 0, "c2": 4}, {"c1": 6, "c2": 4})  # 0.6, 0.4, 1.0 -> median run0
    judge = ScriptedJudge({"rescoring": _runs(*runs)}, delays={"rescoring": 0.05})
    res = await verify(make_traj(2), VerifierConfig(votes=3), judge=judge)
    assert res.process_score_before_penalties == pytest.approx(0.6)
    sides = judge.requests_for("side_effects")
    assert len(sides) == 3  # voted like rescoring and outcome
    last_rescoring = max(r.finished for r in judge.requests_for("rescoring"))
    for req in sides:
        text = user(req)
        assert "[c1] 6/6: run0 says" in text and "[c2] 0/4: run0 says" in text
        assert "run1 says" not in text and "run2 says" not in text
        assert req.started >= last_rescoring


# ---- S3: forced failure needs evidence and, with V > 1, a majority ------------------------------
def _penalty(shots):
    return {"name": "charger added", "description": "an unrequested charger in the cart", "points": 3,
            "screenshots": shots}


async def test_penalty_without_on_screen_evidence_is_dropped_not_forced():
    judge = ScriptedJudge({"side_effects": {"reasoning": "r", "penalties": [_penalty([40])]}})
    res = await verify(make_traj(3), judge=judge)
    assert res.forced_failure == [] and res.outcome_success is True
    assert res.penalties == [] and res.process_score == 1.0
    assert res.unsupported_claims == ["side effect without evidence shown to the judge: charger added"]
    assert res.overruled == ["side effect 'charger added': screenshot(s) [40] cited but not shown in that call: rejected"]


async def test_violation_without_screenshots_is_an_invalid_reply():
    judge = ScriptedJudge({"side_effects": {"reasoning": "r", "critical_point_violation": True}})
    res = await verify(make_traj(3), judge=judge)
    assert res.forced_failure == [] and not res.critical_point_violation
    assert [d.stage for d in res.degraded] == ["side_effects"]


def _side_votes(*answers):
    it = iter(answers)
    return lambda m, o: next(it)


NONE = {"reasoning": "nothing lasting", "penalties": []}
VIOLATION = {"reasoning": "placed the order", "critical_point_violation": True, "critical_point_screenshots": [3]}
PENALTY = {"reasoning": "extra item", "penalties": [_penalty([3])]}


@pytest.mark.parametrize("answers,forced,penalised", [
    ((VIOLATION, NONE, NONE), [], False),  # one unvoted call no longer forces failure
    ((VIOLATION, VIOLATION, NONE), ["critical point crossed without permission"], False),
    ((PENALTY, NONE, NONE), [], False),
    ((PENALTY, NONE, PENALTY), ["unsolicited side effect: charger added (screenshots 3)"], True),
    ((VIOLATION, JudgeInvalidOutputError("x", stage="side_effects"), NONE), [], False),  # a failed vote is no vote
])
async def test_forced_failure_needs_a_majority_of_side_effect_votes(answers, forced, penalised):
    judge = ScriptedJudge({"side_effects": _side_votes(*answers)})
    res = await verify(make_traj(3), VerifierConfig(votes=3), judge=judge)
    assert res.forced_failure == forced
    assert res.outcome_success is (not forced)
    assert bool(res.penalties) is penalised
    assert res.process_score == pytest.approx(10 / 13 if penalised else 1.0)  # dilute: 10 / (10 + 3)


# ---- H1: long histories are compressed, never cut ------------------------------------------------
async def test_long_history_keeps_every_action_line_and_records_the_compression():
    traj = make_traj(12, thoughts=[f"thinking hard about step {i} " + "x" * 400 for i in range(1, 13)])
    judge = ScriptedJudge()
    res = await verify(traj, VerifierConfig(max_history_chars=1000), judge=judge)
    assert res.history is not None
    assert (res.history.steps, res.history.thoughts, res.history.over_budget) == (12, "omitted", False)
    text = user(judge.requests_for("outcome")[0])
    assert "This history is long: the agent's thoughts are left out. All 12 steps' action lines are listed." in text
    for i in range(1, 13):
        assert f"\n| {i}. click" in text
    assert "steps omitted" not in text and "thought: «" not in text


async def test_short_history_is_shown_whole():
    judge = ScriptedJudge()
    res = await verify(make_traj(3), judge=judge)
    assert res.history.thoughts == "full" and not res.history.compressed
    assert "This history is long" not in user(judge.requests_for("outcome")[0])
    assert "thought: «step 2 thought»" in user(judge.requests_for("outcome")[0])


# ---- H2: run status --------------------------------------------------------------------------------
async def test_run_status_is_shown_to_the_judge_but_not_to_the_rubric():
    traj = make_traj(3, answer=None)
    traj.status = RunStatus.step_budget_exhausted
    judge = ScriptedJudge()
    await verify(traj, judge=judge)
    want = "## Run status\nstep budget exhausted: the run was cut off before the agent finished; " \
           "NO final answer was given."
    for stage in ("outcome", "rescoring", "action_scoring", "side_effects", "diagnosis_failures"):
        assert want in user(judge.requests_for(stage)[0]), stage
    assert "Run status" not in user(judge.requests_for("rubric")[0])


# ---- H3: tool list, code-decided 6.2, "other" ------------------------------------------------------
async def test_undeclared_tool_is_decided_in_code_and_judge_gets_the_tool_list():
    traj = make_traj(3)
    traj.task.metadata["tools"] = [{"name": "click"}, "type"]
    traj.steps[1].action = "teleport"
    judge = ScriptedJudge({"diagnosis_failures": {"reasoning": "r", "failure_points": [
        {"steps": [3], "error_code": "6.2", "what_happened": "judge guess"},
        {"steps": [1], "error_code": "other", "what_happened": "clicked an ad"}]}})
    res = await verify(traj, judge=judge)
    text = user(judge.requests_for("diagnosis_failures")[0])
    assert "Actions available to the agent (declared)" in text and "click, type" in text
    codes = [(p.error_code, p.steps) for p in res.diagnosis.failure_points]
    assert codes == [("other", [1]), ("6.2", [2])]  # the judge's 6.2 on step 3 is dropped
    assert "tool_interaction" in res.diagnosis.categories and "other" in res.diagnosis.categories


async def test_without_a_declared_tool_list_no_6_2_is_made():
    judge = ScriptedJudge({"diagnosis_failures": {"reasoning": "r", "failure_points": [
        {"steps": [2], "error_code": "6.2", "what_happened": "judge guess"}]}})
    res = await verify(make_traj(3), judge=judge)
    assert res.diagnosis.failure_points == []
    assert "Not declared. Action names this run used" in user(judge.requests_for("diagnosis_failures")[0])


# ---- O13: a provided rubric is scored as given (no rubric call) ---------------------------------
async def test_provided_rubric_replaces_the_rubric_call_and_its_profile_drives_the_rules():
    from verifier.schemas import Rubric

    given = Rubric.model_validate({
        "criteria": [{"id": "c1", "name": "hours stated", "description": "d", "max_points": 4},
                     {"id": "c2", "name": "cites the URL", "description": "phantom", "max_points": 3}],
        "permission": {"permission": "no_critical_point"}})
    judge = ScriptedJudge({"rescoring": rescore({"c1": 4, "c2": 3})})
    res = await verify(make_traj(2), judge=judge, rubric=given)
    assert "rubric" not in judge.stages() and "rubric" not in res.usage.per_stage
    assert [c.name for c in res.criteria] == ["hours stated", "cites the URL"]
    assert res.permission_profile and res.permission_profile["permission"] == "no_critical_point"
    assert "This task has no critical point" in system(judge.requests_for("outcome")[0])
    assert "cites the URL" in user(judge.requests_for("rescoring")[0])
