"""Replies as large as a real judge writes parse in every stage, and a field at its bound is recorded.

The sizes are the largest the reference's 106 real CUAVerifierBench outputs contain (issue 19):
9 criteria, a 12-point criterion, 167-character names of the form "X (or report Y)", 1,150-character
descriptions, 680-character reality notes, a 580-character primary intent, 820 characters of one
screenshot's evidence, 27 failure points with ranges like "6-17" and code "3.6", half points.
Each reply is parsed twice: as the object the scripted judge hands over, and as JSON text through
`parse_reply`, the path of a real judge's reply.
"""
from __future__ import annotations

import json

from pipeline_helpers import COLORS, make_traj

from verifier import limits
from verifier.cache import StageCache
from verifier.judge.schema import parse_reply
from verifier.pipeline import verify
from verifier.testing import ScriptedJudge


def text(n: int, seed: str = "x") -> str:
    """Prose of exactly `n` characters."""
    base = f"{seed}: the page shows the item, its price and the size chart; the agent's claim matches. "
    return (base * (n // len(base) + 1))[:n - 1] + "."


def name(i: int) -> str:
    return text(153, f"Find item {i}")[:-1] + " (or report Y)."  # 152 + 15 = 167 characters


REAL_RUBRIC = {
    "stated_subgoals": [text(140, f"goal {i}") for i in range(9)],
    "permission_profile": {"permission": "not_granted", "missing_personal_data": ["phone number"]},
    "critical_points": ["Place order"],
    "criteria": [{"name": name(i), "description": text(1150, f"criterion {i}"), "max_points": 12 if i == 0 else 2}
                 for i in range(9)],
    "self_audit": text(700, "audit"),
}


def _reality(m, o):
    return {"notes": [{"criterion_id": c, "screenshots": [18], "note": text(680, f"note {c}")}
                      for c in o.expected_ids]}


def _rescoring(m, o):
    return {"items": [{"criterion_id": c, "evidence_tag": "consistent", "credit_basis": "evidence", "evidence_screenshots": [17, 18],
                       "justification": text(900, c), "earned": 11.5 if c == "c1" else 1.5}
                      for c in o.expected_ids]}


ANSWERS = {
    "rubric": lambda m, o: REAL_RUBRIC,
    "evidence": lambda m, o: {"items": [{"criterion_id": c, "visible": text(820, f"pixels {c}"),
                                         "claims_check": text(820, "claims"), "discrepancies": text(400, "d")}
                                        for c in o.expected_ids]},
    "action_scoring": lambda m, o: {"items": [{"criterion_id": c, "justification": text(900, c), "earned": 2}
                                              for c in o.expected_ids]},
    "rescoring": _rescoring,
    "reality": _reality,
    "outcome": lambda m, o: {"primary_intent": text(580, "intent"), "reasoning": text(2000, "why"),
                             "nitpicks": [text(200, "nit")] * 4, "critical_issues": [], "success": True},
    "side_effects": lambda m, o: {"reasoning": text(1000, "none"), "penalties": []},
    "diagnosis_failures": lambda m, o: {"reasoning": text(1000, "diag"), "failure_points": [
        {"steps": "6-17", "error_code": "3.6", "what_happened": text(500, f"f{k}"), "evidence": text(400, "e")}
        for k in range(27)]},
    "diagnosis_validity": lambda m, o: {"reasoning": text(800, "clear"), "ambiguity_codes": ["7.1"]},
}


def _traj():
    return make_traj([COLORS[i % len(COLORS)] for i in range(18)], task="Order the item; report what you find.")


async def test_real_size_replies_parse_in_every_stage_and_nothing_is_cut():
    judge = ScriptedJudge(ANSWERS)
    res = await verify(_traj(), judge=judge)
    assert res.degraded == [] and res.truncated == []
    assert len(res.criteria) == 9 and res.criteria[0].max_points == 12
    assert [len(res.criteria[0].name), len(res.criteria[0].description)] == [167, 1150]
    assert res.criteria[0].earned == 11.5 and len(res.criteria[0].reality_notes) == 680
    assert len(res.criteria[0].evidence[0].visible) == 820
    assert len(res.primary_intent) == 580
    points = res.diagnosis.failure_points
    assert len(points) == 27 and {p.error_code for p in points} == {"3.6"}
    assert points[0].steps == list(range(6, 18)) and points[0].category == "execution_strategy"
    # The same replies as JSON text, the way a real judge's reply is parsed.
    stages = set()
    for req in judge.requests:
        answer = ANSWERS.get(req.stage)
        if answer is not None:
            parse_reply(json.dumps(answer(req.messages, req.output_model)), req.output_model)
            stages.add(req.stage)
    assert stages == set(ANSWERS)


def _at_bound_rescoring(m, o):
    reply = _rescoring(m, o)
    reply["items"][0]["justification"] = "j" * limits.JUSTIFICATION_CHARS
    return reply


async def test_fields_at_their_bound_are_recorded_in_every_rollout_never_silently():
    rubric = {**REAL_RUBRIC, "criteria": [{**REAL_RUBRIC["criteria"][0],
                                           "description": "d" * limits.CRITERION_DESCRIPTION_CHARS}]}
    answers = {**ANSWERS, "rubric": lambda m, o: rubric, "rescoring": _at_bound_rescoring,
               "outcome": lambda m, o: {"primary_intent": "i", "reasoning": "r", "success": True,
                                        "nitpicks": ["n"] * limits.MAX_NITPICKS}}
    judge, cache = ScriptedJudge(answers), StageCache()
    first = await verify(_traj(), judge=judge, cache=cache)
    second = await verify(_traj(), judge=judge, cache=cache)  # the rubric comes from the cache
    assert len(judge.requests_for("rubric")) == 1
    for res in (first, second):
        assert res.truncated == ["rubric:criteria[0].description", "rescoring:items[0].justification",
                                 "outcome:nitpicks"]
        # Kept whole: a bound is recorded, the text is not cut further.
        assert len(res.criteria[0].description) == limits.CRITERION_DESCRIPTION_CHARS
    # One entry per criterion (a narrowed list of fixed length) is complete, not truncated.
    assert not any(t.endswith(("notes", "items")) for t in first.truncated)
