"""A relevance call's schema comes from a per-(rubric, batch length) template with the call's
screenshot numbers put in (`verifier.narrowing`): it must be byte-identical to the schema pydantic's
path gives for that call's class, cost no schema derivation per call, and leave validation (hence
the re-ask text) as it was."""
from __future__ import annotations

import json

import pytest

from verifier import narrowing
from verifier.judge.schema import (
    ReplyParseError,
    json_schema_for,
    model_schema,
    parse_reply,
    portability_problems,
    schema_instructions,
)
from verifier.schemas import RelevanceBatch

RUBRIC_A = ("c1", "c2", "c3")
RUBRIC_B = ("c1", "c4", "c2", "c7", "c9")
CALLS = [(RUBRIC_A, (1,)), (RUBRIC_A, (17,)), (RUBRIC_A, (1, 2)), (RUBRIC_A, (9, 4)),
         (RUBRIC_A, (50, 3, 12)), (RUBRIC_B, (5,)), (RUBRIC_B, (8, 2, 6, 11, 40, 41, 7, 100)),
         (RUBRIC_B, (2, 8, 6, 11, 40, 41, 7, 100)), (RUBRIC_A, (10_000,))]


def _fresh():
    narrowing.for_call.cache_clear()
    narrowing._relevance_template.cache_clear()
    model_schema.cache_clear()


def _wire(schema) -> str:
    return json.dumps(schema, separators=(",", ":"))  # as the request body carries it: key order counts


def test_template_schema_is_byte_identical_to_pydantics_for_every_call():
    _fresh()
    for ids, shots in CALLS:
        model = narrowing.for_call(RelevanceBatch, ids, shots)
        assert model.wire_schema is not None
        old = model_schema(narrowing._build(RelevanceBatch, ids, shots))  # the path every call took before
        assert _wire(json_schema_for(model)) == _wire(old)
        assert schema_instructions(model) == schema_instructions(narrowing._build(RelevanceBatch, ids, shots))
        assert portability_problems(json_schema_for(model)) == []
    rows = json_schema_for(narrowing.for_call(RelevanceBatch, RUBRIC_A, (9, 4)))["properties"]["rows"]
    assert rows["items"]["properties"]["screenshot"]["enum"] == [9, 4]  # the call's numbers, in order
    assert [r["properties"]["screenshot"]["enum"] for r in rows["prefixItems"]] == [[9], [4]]


def test_template_does_not_leak_between_calls():
    _fresh()
    first = _wire(json_schema_for(narrowing.for_call(RelevanceBatch, RUBRIC_A, (3, 5))))
    json_schema_for(narrowing.for_call(RelevanceBatch, RUBRIC_A, (7, 8)))  # same template, other numbers
    template = narrowing._relevance_template(RUBRIC_A, 2)
    assert template["properties"]["rows"]["items"]["properties"]["screenshot"]["enum"] == [1, 2]
    assert _wire(json_schema_for(narrowing.for_call(RelevanceBatch, RUBRIC_A, (3, 5)))) == first


def test_a_new_screenshot_number_costs_no_schema_derivation():
    _fresh()
    json_schema_for(narrowing.for_call(RelevanceBatch, RUBRIC_B, (1,)))
    derived = model_schema.cache_info().misses
    for n in range(2, 12):  # a trajectory's relevance calls: every one a screenshot not seen before
        json_schema_for(narrowing.for_call(RelevanceBatch, RUBRIC_B, (n,)))
    assert model_schema.cache_info().misses == derived


@pytest.mark.parametrize("reply", [
    {"rows": [{"screenshot": 4, "scores": [{"criterion_id": c, "score": 1} for c in RUBRIC_A]}]},
    {"rows": [{"screenshot": 3, "scores": [{"criterion_id": c, "score": 1} for c in ("c1", "c1", "c3")]}]},
    {"rows": [{"screenshot": 3, "scores": [{"criterion_id": c, "score": 1} for c in ("c1", "c2")]}]},
    {"rows": [{"screenshot": 3, "scores": [{"criterion_id": c, "score": 1} for c in RUBRIC_A]}] * 2},
], ids=["wrong-screenshot", "repeated-id", "missing-id", "repeated-row"])
def test_bad_replies_get_the_same_reask_text(reply):
    _fresh()
    text = json.dumps(reply)
    with pytest.raises(ReplyParseError) as new:
        parse_reply(text, narrowing.for_call(RelevanceBatch, RUBRIC_A, (3,)))
    with pytest.raises(ReplyParseError) as old:
        parse_reply(text, narrowing._build(RelevanceBatch, RUBRIC_A, (3,)))
    assert new.value.feedback == old.value.feedback
    assert "screenshot" in new.value.feedback or "criterion_id" in new.value.feedback or "rows" in new.value.feedback
