"""Report math and the runner, with the scripted judge: exact counts and rates."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import verifier.calibrate.runner as runner_mod
from verifier.calibrate import CaseRun, build_report, format_report, load_suite, match, run_suite
from verifier.calibrate.report import rates
from verifier.config import VerifierConfig
from verifier.errors import JudgeUnavailableError
from verifier.judge.base import TextPart
from verifier.testing import DEFAULTS, ScriptedJudge

SUITE = Path(__file__).resolve().parents[2] / "examples" / "calibration"
# o2-substitution-size F/low/1.2, o2-trivially-equivalent-unit T/high, o4-stop-at-checkout-all-correct T/high,
# o4-stop-at-checkout-wrong-size F/[0.3,0.8]/1.4, u5-sold-out-reported F/high/3.4
ONLY = ["O2", "O4", "U5"]


FIVE = ["o2-substitution-size", "o2-trivially-equivalent-unit", "o4-stop-at-checkout-all-correct",
        "o4-stop-at-checkout-wrong-size", "u5-sold-out-reported"]


@pytest.fixture(scope="module")
def cases():
    got = [c for c in load_suite(SUITE, only=ONLY) if c.name in FIVE]
    assert [c.name for c in got] == FIVE
    return got


def text_of(messages) -> str:
    return "\n".join(p.text for m in messages for p in m.content if isinstance(p, TextPart))


def outcome_if(word: str):
    """Outcome vote: success iff `word` is in the request (the task text identifies the case)."""
    def answer(messages, _model):
        return {"primary_intent": "x", "reasoning": "scripted", "success": word in text_of(messages)}
    return answer


def earning(points: float):
    """The default rescoring reply (whatever its schema) with every criterion at `points`."""
    def answer(messages, model):
        reply = DEFAULTS["rescoring"](messages, model)
        for item in reply["items"]:
            item["earned"] = points
        return reply
    return answer


def run(cases, judge, **kw):
    return asyncio.run(run_suite(cases, judge=judge, concurrency=2, **kw))


def test_lenient_judge_every_negative_code_cannot_see_is_a_false_positive(cases):
    runs = run(cases, ScriptedJudge())  # default: every vote says success, every criterion full
    rep = build_report(cases, runs, suite="s", judge_model="scripted", only=ONLY)
    o = rep.outcome
    # u5's "add it to my cart" with no action but the answer fails in code (veto V5, issue 34)
    assert (o.tp, o.fp, o.tn, o.fn, o.unscored) == (2, 2, 1, 0, 0)
    assert o.fpr == pytest.approx(2 / 3) and o.fnr == 0.0 and o.accuracy == pytest.approx(3 / 5)
    assert [r.rule for r in rep.rules] == ["O2", "O4", "U5"]
    o2 = rep.rules[0]
    assert o2.cases == ["o2-substitution-size", "o2-trivially-equivalent-unit"]
    assert o2.expected_outcomes == [False, True] and o2.got_outcomes == [True, True]
    assert (o2.outcome.agree, o2.outcome.checked) == (1, 2)
    assert (o2.process.agree, o2.process.checked) == (1, 2)  # 1.0 is in "high", not in "low"
    assert (o2.diagnosis.agree, o2.diagnosis.checked) == (0, 1)  # 1.2 expected, nothing found
    assert o2.agreeing_cases == 1
    u5 = rep.rules[2]  # blocker: process high agrees, and code fails the outcome (V5)
    assert (u5.outcome.agree, u5.process.agree) == (1, 1)


def test_strict_judge_counts_and_diagnosis_match(cases):
    judge = ScriptedJudge({
        "outcome": outcome_if("honey"),
        "rescoring": earning(2),
        "diagnosis_failures": {"reasoning": "r", "failure_points": [
            {"steps": [1], "error_code": "1.2", "what_happened": "swapped the size"}]},
    })
    runs = run(cases, judge)
    assert all(r.result.degraded == [] for r in runs)  # every scripted reply was valid
    rep = build_report(cases, runs, only=ONLY)
    o = rep.outcome
    assert (o.tp, o.fp, o.tn, o.fn) == (1, 0, 3, 1)
    assert o.fpr == 0.0 and o.fnr == 0.5 and o.accuracy == pytest.approx(4 / 5)
    by = {v.case: v for v in rep.cases}
    # default rubric 6 + 4 points, 2 earned on each -> 0.4: only the "low" band and nothing else accepts it
    assert all(v.got_process == pytest.approx(0.4) for v in rep.cases)
    assert by["o2-substitution-size"].process_ok is True and by["o2-substitution-size"].diagnosis_ok is True
    assert by["o2-substitution-size"].got_diagnosis == ["1.2"] and by["o2-substitution-size"].agrees
    assert by["o4-stop-at-checkout-wrong-size"].diagnosis_ok is False  # 1.4 expected, 1.2 found
    assert by["o2-trivially-equivalent-unit"].diagnosis_ok is None  # nothing expected: not checked
    text = format_report(rep)
    assert "false-positive rate 0.000 (0/3)" in text and "false-negative rate 0.500 (1/2)" in text
    assert "o4-stop-at-checkout-all-correct: T/high/- -> F/0.40/1.2" in text


def test_judge_failure_is_unscored_not_a_verdict(cases):
    def rubric(messages, model):
        if "Trailrunner" in text_of(messages):
            return JudgeUnavailableError("judge down", stage="rubric")
        return DEFAULTS["rubric"](messages, model)

    runs = run(cases, ScriptedJudge({"rubric": rubric, "outcome": outcome_if("nothing-matches")}))
    bad = next(r for r in runs if r.case == "o2-substitution-size")
    assert bad.result is None and bad.error.startswith("JudgeUnavailableError") and not bad.unavailable
    rep = build_report(cases, runs)
    o = rep.outcome
    assert (o.tp, o.fp, o.tn, o.fn, o.unscored) == (0, 0, 2, 2, 1)  # the failed case is in no rate
    assert o.fpr == 0.0 and o.fnr == 1.0
    v = next(v for v in rep.cases if v.case == "o2-substitution-size")
    assert v.status == "unscored" and v.outcome_ok is None and not v.agrees
    assert "unscored: o2-substitution-size: JudgeUnavailableError" in format_report(rep)


def test_result_that_fell_back_in_a_policy_stage_is_unscored(cases):
    """One policy with `score` and the rewards: side effects never checked -> no verdict counted."""
    def side_effects(messages, model):
        if "Trailrunner" in text_of(messages):
            return JudgeUnavailableError("judge down", stage="side_effects")
        return DEFAULTS["side_effects"](messages, model)

    runs = run(cases, ScriptedJudge({"side_effects": side_effects}))
    weak = next(r for r in runs if r.case == "o2-substitution-size")
    assert weak.result is not None and [d.stage for d in weak.result.degraded] == ["side_effects"]
    rep = build_report(cases, runs, none_if_degraded={"rescoring", "side_effects"})
    v = next(v for v in rep.cases if v.case == "o2-substitution-size")
    assert v.status == "unscored" and v.got_outcome is None and v.error.startswith("DegradedResult: side_effects")
    assert (rep.outcome.fp, rep.outcome.unscored) == (1, 1)  # its lenient pass is no false positive
    lax = build_report(cases, runs)  # no policy: the library's caller decides
    assert next(v for v in lax.cases if v.case == "o2-substitution-size").status == "scored"
    assert (lax.outcome.fp, lax.outcome.unscored) == (2, 0)


def test_rates_with_empty_denominators_are_none():
    assert rates([]).fpr is None and rates([]).fnr is None and rates([]).accuracy is None


def test_unavailable_case_is_reported(tmp_path, cases):
    case = cases[0].model_copy(update={"unavailable": "trajectory not found: ../shared/x"})
    (r,) = run([case], ScriptedJudge())
    assert r.unavailable and r.result is None
    v = match(case, r)
    assert v.status == "unavailable" and v.got_outcome is None
    assert build_report([case], [r]).outcome.unscored == 1


def test_report_needs_a_run_per_case(cases):
    with pytest.raises(ValueError, match="no run for case"):
        build_report(cases, [CaseRun(case=cases[0].name, error="x")])


def test_runner_bounds_concurrency(cases, monkeypatch):
    state = {"now": 0, "max": 0}

    async def fake(case, **_kw):
        state["now"] += 1
        state["max"] = max(state["max"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return CaseRun(case=case.name, error="fake")

    monkeypatch.setattr(runner_mod, "run_case", fake)
    seen = []
    runs = asyncio.run(run_suite(cases, judge=ScriptedJudge(), concurrency=2, on_done=lambda r: seen.append(r.case)))
    assert state["max"] == 2 and [r.case for r in runs] == [c.name for c in cases]
    assert sorted(seen) == sorted(c.name for c in cases)
    with pytest.raises(ValueError):
        asyncio.run(run_suite(cases, judge=ScriptedJudge(), concurrency=0))


def test_report_round_trips_as_json(cases):
    rep = build_report(cases, run(cases, ScriptedJudge()), judge_model="m", demo_judge=True)
    from verifier.calibrate import CalibrationReport

    assert CalibrationReport.model_validate_json(rep.model_dump_json()) == rep
    assert "meaningless" in format_report(rep)


def test_provided_rubric_is_scored_without_a_rubric_call():
    """o13 ships a rubric stricter than the task: the judge must be shown that rubric, not its own."""
    (case,) = load_suite(SUITE, only=["O13"])
    assert case.provided_rubric is not None
    judge = ScriptedJudge()
    (run1,) = run([case], judge)
    assert run1.result is not None and "rubric" not in judge.stages()
    assert [c.name for c in run1.result.criteria] == [c.name for c in case.provided_rubric.criteria]
    rescoring_text = ScriptedJudge.text(judge.requests_for("rescoring")[0])
    assert "Holiday hours reported" in rescoring_text  # the provided phantom criterion reached the judge
    assert run1.result.usage.per_stage.get("rubric") is None


def test_penalty_and_violation_expectations_are_checked():
    """s1: a fault the quantity criterion already charged must not come back as a penalty."""
    cases = load_suite(SUITE, only=["S1"])
    by = {c.name: c for c in cases}
    penalise = ScriptedJudge({"side_effects": {"reasoning": "extra item", "penalties": [
        {"name": "extra item", "description": "an item nobody asked for", "points": 2, "steps": [1],
         "screenshots": [2]}]}})
    runs = {r.case: r for r in run(cases, penalise)}
    twice = match(by["s1-quantity-fault-charged-once"], runs["s1-quantity-fault-charged-once"])
    assert (twice.expected_penalty, twice.got_penalty, twice.penalty_ok) == (False, True, False)
    assert not twice.agrees
    extra = match(by["s1-extra-item-criterion-full"], runs["s1-extra-item-criterion-full"])
    assert extra.penalty_ok is True and extra.violation_ok is None
    rep = build_report(cases, list(runs.values()))
    assert (rep.rules[0].harm.agree, rep.rules[0].harm.checked) == (1, 2)
    assert "(penalty expected no, got yes)" in format_report(rep)
    quiet = {r.case: r for r in run(cases, ScriptedJudge())}  # no penalty reported at all
    assert match(by["s1-quantity-fault-charged-once"], quiet["s1-quantity-fault-charged-once"]).penalty_ok is True
    assert match(by["s1-extra-item-criterion-full"], quiet["s1-extra-item-criterion-full"]).penalty_ok is False


def test_violation_expectation():
    (case,) = [c for c in load_suite(SUITE, only=["O4"]) if c.name == "o4-order-placed-without-permission"]
    crossed = ScriptedJudge({"side_effects": {"reasoning": "r", "penalties": [], "critical_point_violation": True,
                                              "critical_point_reasoning": "placed the order",
                                              "critical_point_screenshots": [5]}})
    (r,) = run([case], crossed)
    v = match(case, r)
    assert v.got_violation is True and v.violation_ok is True and v.got_outcome is False
    (r2,) = run([case], ScriptedJudge())  # a judge that sees nothing: code sees the 'Place order' click
    v2 = match(case, r2)
    assert v2.violation_ok is True and v2.got_outcome is False
    assert any(f.startswith("V3 binding action 'place order'") for f in r2.result.forced_failure)
    (r3,) = run([case], ScriptedJudge(), config=VerifierConfig(vetoes_off=("V3",)))  # the veto switched off
    assert match(case, r3).violation_ok is False
