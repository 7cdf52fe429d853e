"""Schema generation (strict-compatible, bounded) and reply parsing (tolerant where it must be)."""
from __future__ import annotations

import json
import logging
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from verifier.errors import ConfigError
from verifier.judge.schema import (
    ReplyParseError,
    json_schema_for,
    parse_reply,
    schema_instructions,
    schema_name,
    strip_fences,
    unbounded_paths,
)


class Criterion(BaseModel):
    title: str = Field(max_length=80)  # a property literally named "title" must survive
    default: int = Field(default=0, ge=0, le=10)  # ...and one named "default"


class Verdict(BaseModel):
    """Outcome verdict."""

    success: bool
    label: Literal["yes", "no"]
    score: int = Field(ge=0, le=100)
    criteria: list[Criterion] = Field(max_length=5)
    note: str | None = Field(default=None, max_length=40)


class Node(BaseModel):
    children: list[Node] = Field(max_length=2)


def walk(node):
    yield node
    if isinstance(node, dict):
        for v in node.values():
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


def test_schema_is_self_contained_closed_and_all_required():
    schema = json_schema_for(Verdict)
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    objects = [n for n in walk(schema) if isinstance(n, dict) and n.get("type") == "object"]
    assert len(objects) == 2  # Verdict and the inlined Criterion
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    item = schema["properties"]["criteria"]["items"]
    assert set(item["properties"]) == {"title", "default"}
    assert item["properties"]["default"] == {"type": "integer", "minimum": 0, "maximum": 10}
    assert schema["properties"]["criteria"]["maxItems"] == 5
    assert schema["properties"]["label"]["enum"] == ["yes", "no"]
    assert unbounded_paths(schema) == []


def test_unbounded_fields_are_reported_and_warned(caplog):
    class Loose(BaseModel):
        text: str
        tags: list[str] = Field(max_length=3)
        n: int = Field(ge=0)
        p: float = Field(ge=0.0, le=1.0)  # bounded: range + the multipleOf json_schema_for adds
        q: float = Field(ge=0.0)  # no maximum: unbounded

    with caplog.at_level(logging.WARNING, logger="cua_verifier.judge"):
        schema = json_schema_for(Loose)
    assert unbounded_paths(schema) == ["$.text", "$.tags[]", "$.n", "$.q"]
    assert "unbounded" in caplog.text and "$.text" in caplog.text


def test_recursive_model_is_a_config_error():
    with pytest.raises(ConfigError, match="recursive"):
        json_schema_for(Node)


def test_schema_name_is_api_safe():
    assert schema_name(Verdict) == "Verdict"
    weird = type("My Model!", (BaseModel,), {"__annotations__": {"x": bool}})
    assert schema_name(weird) == "My_Model_"


GOOD = {"success": True, "label": "yes", "score": 50, "criteria": [{"title": "t", "default": 1}], "note": None}


def test_parse_valid_reply():
    assert parse_reply(json.dumps(GOOD), Verdict).criteria[0].title == "t"


def test_parse_tolerates_raw_control_characters_inside_strings():
    raw = json.dumps(GOOD).replace('"title": "t"', '"title": "line one\nline\ttwo"')
    assert "\n" in raw  # a literal newline inside a JSON string: invalid for strict json.loads
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)
    assert parse_reply(raw, Verdict).criteria[0].title == "line one\nline\ttwo"


def test_fences_are_stripped_only_when_lenient():
    fenced = "```json\n" + json.dumps(GOOD) + "\n```"
    assert parse_reply(fenced, Verdict, lenient=True).success is True
    with pytest.raises(ReplyParseError, match="not valid JSON"):
        parse_reply(fenced, Verdict)
    assert strip_fences("Sure! Here it is: {\"a\": 1} Hope this helps") == '{"a": 1}'


def test_parse_errors_carry_model_facing_feedback():
    with pytest.raises(ReplyParseError) as err:
        parse_reply("{not json", Verdict)
    assert "not valid JSON" in err.value.feedback and "line 1" in err.value.feedback
    bad = dict(GOOD, score=700, label="maybe")
    with pytest.raises(ReplyParseError) as err:
        parse_reply(json.dumps(bad), Verdict)
    assert "score" in err.value.feedback and "label" in err.value.feedback
    with pytest.raises(ReplyParseError, match="empty"):
        parse_reply("   ", Verdict)


def test_schema_instructions_embed_the_schema():
    text = schema_instructions(Verdict)
    assert json.dumps(json_schema_for(Verdict), separators=(",", ":")) in text
