"""Every output model sent to the judge is finite under constrained decoding.

A weak judge (or a random-weight test model) never closes an unbounded string and can write
`1.0000...` into a float until max_tokens, so every string needs maxLength, every list maxItems,
every number must be a bounded integer. Checked on the base models, on the per-call models
`for_call` builds, and on every model a full pipeline run actually requested.
"""
import inspect

import pytest
from pipeline_helpers import make_traj, rubric_answer
from pydantic import BaseModel

from verifier import schemas
from verifier.config import VerifierConfig
from verifier.judge.schema import json_schema_for, unbounded_paths, worst_case_chars
from verifier.limits import MAX_CRITERION_POINTS
from verifier.narrowing import for_call
from verifier.pipeline import verify
from verifier.testing import ScriptedJudge

BASE_MODELS = sorted((obj for _, obj in inspect.getmembers(schemas, inspect.isclass)
                      if issubclass(obj, schemas._Out) and obj is not schemas._Out), key=lambda c: c.__name__)
BATCHES = [schemas.RelevanceBatch, schemas.EvidenceBatch, schemas.ConditionDecision, schemas.ActionScores,
           schemas.Rescoring]
IDS = tuple(f"c{i}" for i in range(1, schemas.MAX_CRITERIA + 1))


HALF_POINTS = [k / 2 for k in range(2 * MAX_CRITERION_POINTS + 1)]


def _numbers(schema) -> list[str]:
    """JSON-schema `number` (float) fields other than half points: none may reach the judge.

    Earned points are the one non-integer number: [0, 24] in steps of 0.5 (one decimal at most),
    sent as the list of its 49 allowed values (every structured-outputs backend compiles an enum)."""
    if isinstance(schema, dict):
        half_points = schema.get("enum") == HALF_POINTS
        found = ["number"] if schema.get("type") == "number" and not half_points else []
        return found + [p for v in schema.values() for p in _numbers(v)]
    if isinstance(schema, list):
        return [p for v in schema for p in _numbers(v)]
    return []


def test_base_models_are_enumerated():
    names = {m.__name__ for m in BASE_MODELS}
    assert {"RubricDraft", "Rescoring", "ActionScores", "Outcome", "SideEffects", "FailureReport"} <= names


@pytest.mark.parametrize("model", BASE_MODELS, ids=lambda m: m.__name__)
def test_base_model_has_no_unbounded_path(model):
    schema = json_schema_for(model)
    assert unbounded_paths(schema) == []
    assert _numbers(schema) == []


@pytest.mark.parametrize("base", BATCHES, ids=lambda m: m.__name__)
@pytest.mark.parametrize("n", [1, schemas.MAX_CRITERIA])
def test_per_call_models_have_no_unbounded_path(base, n):
    model = for_call(base, IDS[:n], (3, 7) if base is schemas.RelevanceBatch else ())
    schema = json_schema_for(model)
    assert unbounded_paths(schema) == []
    assert _numbers(schema) == []


async def test_every_model_a_run_requests_is_bounded():
    grouped = rubric_answer([
        {"name": "a", "description": "d", "max_points": 2},
        {"name": "b", "description": "d", "max_points": 2, "condition": "x", "exclusive_group": "g"},
        {"name": "c", "description": "d", "max_points": 2, "condition": "not x", "exclusive_group": "g"}])
    judge = ScriptedJudge({"rubric": grouped, "rubric_audit": grouped})
    cfg = VerifierConfig(rubric_audit=True, votes=3, relevance_batch_size=2)
    await verify(make_traj(["red", "green", "blue", "blue", "white"]), cfg, judge=judge)
    requested: set[type[BaseModel]] = {r.output_model for r in judge.requests}
    assert {r.stage for r in judge.requests} >= {"rubric", "rubric_audit", "relevance", "evidence", "conditions",
                                                 "action_scoring", "rescoring", "side_effects", "outcome",
                                                 "diagnosis_failures", "diagnosis_validity"}
    for model in requested:
        schema = json_schema_for(model)
        assert unbounded_paths(schema) == [], model.__name__
        assert _numbers(schema) == [], model.__name__


@pytest.mark.parametrize("base", [schemas.Rescoring, schemas.ActionScores], ids=lambda m: m.__name__)
def test_earned_points_are_half_points_in_range(base):
    model = for_call(base, ("c1",))
    item = {"criterion_id": "c1", "evidence_tag": "consistent", "justification": "j", "credit_basis": "evidence"}
    if base is schemas.ActionScores:
        item = {"criterion_id": "c1", "justification": "j"}
    notes: dict = {}
    for ok in (0, 0.5, 2.5, 7, 10, 11.5, 24):  # half points up to 24 (real: 11 of 369 final values)
        assert model.model_validate({**notes, "items": [{**item, "earned": ok}]}).items[0].earned == ok
    for bad in (2.25, 0.1, 24.5, 25, -0.5):
        with pytest.raises(ValueError):
            model.model_validate({**notes, "items": [{**item, "earned": bad}]})
    earned = json_schema_for(model)["properties"]["items"]["items"]["properties"]["earned"]
    assert (earned["type"], earned["enum"]) == ("number", HALF_POINTS)


# The worst case (every string and list full) pinned, so a bound cannot grow unnoticed. Since
# issue 19 the bounds are sized from real judge output (verifier.limits: each at least twice the
# largest real value), no longer from what a weak judge can fill within max_tokens: a capable judge
# cut off by the contract is a wrong verdict, while a weak judge that fills every field of a large
# call until `max_tokens_cap` gets a typed, visible JudgeTruncatedError. A value at its bound is
# recorded in `result.truncated`. Outcome 10_500 -> 10_700: four named checks (issue 34 §3), ~200 chars.
FIXED_BUDGET = {"RubricDraft": 71_000, "FailureReport": 111_000, "Outcome": 10_700, "SideEffects": 12_000,
                "TaskValidity": 1_300}
PER_CRITERION_BUDGET = 5_300  # characters per criterion of a per-call model (evidence is the largest)


@pytest.mark.parametrize("name,budget", sorted(FIXED_BUDGET.items()))
def test_worst_case_reply_of_fixed_models(name, budget):
    assert worst_case_chars(json_schema_for(getattr(schemas, name))) <= budget


@pytest.mark.parametrize("base", BATCHES, ids=lambda m: m.__name__)
def test_worst_case_reply_of_per_call_models_grows_per_criterion(base):
    for n in (1, 3, schemas.MAX_CRITERIA):
        shots = tuple(range(1, schemas.MAX_BATCH + 1)) if base is schemas.RelevanceBatch else ()
        size = worst_case_chars(json_schema_for(for_call(base, IDS[:n], shots)))
        assert size <= 100 + PER_CRITERION_BUDGET * n, (n, size)
