"""Which fields of a judge's reply reached their bound: recorded, never cut silently.

Why: under constrained decoding a string that reaches its ``maxLength`` (or a list its
``maxItems``) was stopped by the grammar, perhaps mid-sentence or with items left out; without
constrained decoding the parser would have rejected anything longer. Either way a value at its
bound may be incomplete, so the result lists it (`VerificationResult.truncated`, paths like
``rescoring:items[2].justification``) and a reader knows which verdicts rest on cut text.

The walk follows the JSON schema actually sent (`judge.schema.json_schema_for`), so it checks
exactly the bounds the backend enforced. Lists of fixed length (``minItems == maxItems``, one
entry per criterion or screenshot of a narrowed call) are complete by construction and never count.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from .judge.schema import json_schema_for


def at_bound(reply: BaseModel) -> list[str]:
    """Paths of `reply`'s strings and lists that reached the bound of their schema."""
    return _walk(reply.model_dump(mode="json"), json_schema_for(type(reply)), "")


@lru_cache(maxsize=512)
def limits_note(model: type[BaseModel]) -> str:
    """One line telling the judge the character limit of each text field of `model`'s reply.

    Why in the request text too: the schema's descriptions state each limit, but a server doing
    constrained decoding (vLLM's ``json_schema`` mode) enforces the schema without showing it to
    the model, which would then learn a limit only by being cut off mid-sentence.
    """
    found: dict[str, int] = {}

    def walk(node: Any, name: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string" and "maxLength" in node and name != "criterion_id":
                found.setdefault(name, node["maxLength"])
            for key, sub in node.items():
                if key == "properties":
                    for prop, s in sub.items():
                        walk(s, prop)
                elif isinstance(sub, (dict, list)):
                    walk(sub, name)
        elif isinstance(node, list):
            for sub in node:
                walk(sub, name)
    walk(json_schema_for(model), "")
    if not found:
        return ""
    return "Reply length limits (characters, per item for lists): " + ", ".join(f"{k} {v}" for k, v in found.items()) + "."


def _branch(value: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """The anyOf/oneOf branch a value was checked against (by JSON type), else `schema`."""
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key, []):
            kind = sub.get("type")
            if ((kind == "string" and isinstance(value, str)) or (kind == "array" and isinstance(value, list))
                    or (kind == "object" and isinstance(value, dict))):
                return sub
    return schema


def _walk(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    schema = _branch(value, schema)
    if isinstance(value, str):
        limit = schema.get("maxLength")
        return [path] if limit is not None and len(value) >= limit else []
    if isinstance(value, list):
        limit = schema.get("maxItems")
        found = ([path] if limit is not None and len(value) >= limit and schema.get("minItems") != limit
                 else [])
        prefix, items = schema.get("prefixItems") or [], schema.get("items")
        for k, item in enumerate(value):
            sub = prefix[k] if k < len(prefix) else items
            if isinstance(sub, dict):
                found += _walk(item, sub, f"{path}[{k}]")
        return found
    if isinstance(value, dict):
        props = schema.get("properties", {})
        found = []
        for key, item in value.items():
            if key in props:
                found += _walk(item, props[key], f"{path}.{key}" if path else key)
        return found
    return []
