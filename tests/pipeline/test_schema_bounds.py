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
from verifier.narrowing import for_call
from verifier.pipeline import verify
from verifier.testing import ScriptedJudge

BASE_MODELS = sorted((obj for _, obj in inspect.getmembers(schemas, inspect.isclass)
                      if issubclass(obj, schemas._Out) and obj is not schemas._Out), key=lambda c: c.__name__)
BATCHES = [schemas.RelevanceBatch, schemas.EvidenceBatch, schemas.ConditionDecision, schemas.ActionScores,
           schemas.Rescoring]
IDS = tuple(f"c{i}" for i in range(1, schemas.MAX_CRITERIA + 1))


def _numbers(schema) -> list[str]:
    """JSON-schema `number` (float) fields other than half points: none may reach the judge.

    Earned points are the one non-integer number: [0, 10] in steps of 0.5 (one decimal at most),
    sent as the list of its 21 allowed values (every structured-outputs backend compiles an enum)."""
    if isinstance(schema, dict):
        half_points = schema.get("enum") == [k / 2 for k in range(21)]
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
    item = {"criterion_id": "c1", "evidence_tag": "consistent", "justification": "j"}
    if base is schemas.ActionScores:
        item = {"criterion_id": "c1", "justification": "j"}
    notes = {"reality_notes": [{"criterion_id": "c1", "note": "n"}]} if base is schemas.Rescoring else {}
    for ok in (0, 0.5, 2.5, 7, 10):
        assert model.model_validate({**notes, "items": [{**item, "earned": ok}]}).items[0].earned == ok
    for bad in (2.25, 0.1, 10.5, 11, -0.5):
        with pytest.raises(ValueError):
            model.model_validate({**notes, "items": [{**item, "earned": bad}]})
    earned = json_schema_for(model)["properties"]["items"]["items"]["properties"]["earned"]
    assert (earned["type"], earned["enum"]) == ("number", [k / 2 for k in range(21)])


# A weak judge tends to fill every string and list, and must still close its JSON within max_tokens
# (2048 by default; the engine-tier model truncated a 6.8k-character Outcome). These caps keep the
# worst case small; the rubric is the one large reply (up to 12 criteria with full/partial/zero text).
# The rubric grew by the permission profile (issue 9, S2), about 760 characters at worst.
FIXED_BUDGET = {"RubricDraft": 22_000, "FailureReport": 4_500, "Outcome": 3_500, "SideEffects": 3_500,
                "TaskValidity": 1_500}
PER_CRITERION_BUDGET = 1_700  # characters per criterion of a per-call model (evidence is the largest)


@pytest.mark.parametrize("name,budget", sorted(FIXED_BUDGET.items()))
def test_worst_case_reply_of_fixed_models(name, budget):
    assert worst_case_chars(json_schema_for(getattr(schemas, name))) <= budget


@pytest.mark.parametrize("base", BATCHES, ids=lambda m: m.__name__)
def test_worst_case_reply_of_per_call_models_grows_per_criterion(base):
    for n in (1, 3, schemas.MAX_CRITERIA):
        shots = tuple(range(1, schemas.MAX_BATCH + 1)) if base is schemas.RelevanceBatch else ()
        size = worst_case_chars(json_schema_for(for_call(base, IDS[:n], shots)))
        assert size <= 100 + PER_CRITERION_BUDGET * n, (n, size)
