"""Pydantic output model -> the JSON schema sent to the judge, and judge text -> the model.

The output model is the single source of truth: it is both what constrains decoding
(``response_format`` json_schema) and what validates the reply. Two production facts shape this:

- Strict structured outputs want a self-contained schema: every object closed
  (``additionalProperties: false``), every property required, no ``$ref``. We inline ``$defs``
  and strip ``title``/``default`` noise so the schema is also short enough to paste into a prompt
  in ``json_object`` fallback mode.
- A weak model never closes an unbounded string, and vLLM's default grammar backend lets raw
  control characters into bounded strings (strict ``json.loads`` then fails). So we warn about
  unbounded fields and parse with ``json.loads(strict=False)``.
- A float in [0, 1] still lets a weak model write ``1.0000...`` until max_tokens: a range bounds
  the value, not the digits. Every float property is sent with ``multipleOf`` (``FLOAT_STEP``, or
  the field's own ``multiple_of``), which vLLM's guidance backend turns into a bounded number of
  decimals. Only the emitted schema changes: pydantic still parses any float.
- Every backend vLLM offers (``xgrammar``, ``guidance``, ``outlines``, ``lm-format-enforcer``)
  must accept the schema: an explicitly chosen xgrammar has no fallback and rejects ``multipleOf``
  and a string ``pattern`` beside ``minLength``/``maxLength``. `_portable` rewrites both into
  equivalents every backend reads: a stepped number with a range becomes the ``enum`` of its
  values (at most ``MAX_ENUM_VALUES``; beyond that the step is dropped and the field reported as
  unbounded), and a length-bounded pattern of one repeated character class gets the bounds folded
  into its quantifier (``^[a-z]+$`` with maxLength 40 -> ``^[a-z]{1,40}$``); any other
  length-bounded pattern is dropped from the emitted schema (the output model still checks it, and
  a violation is re-asked). `portability_problems` lists what a schema still has that some
  backend rejects; tests run the real backends' validators on every output schema.
- "Each id exactly once" (a narrowed call's list of one entry per criterion id or screenshot) is a
  cross-field rule a plain array of enum items cannot express: a random-weight judge on the CPU
  engine repeated one id in every entry and spent all its re-asks. An array marked with
  ``ONE_EACH`` (``{"x-one-each": "criterion_id"}``) whose items enumerate that property with as
  many values as the list holds gets ``prefixItems``: position k admits only the k-th value, so
  constrained decoding writes each value once, in order. ``items`` stays as it was for a backend
  that ignores ``prefixItems`` (lm-format-enforcer), and the output model still checks the rule.
- A schema with every field bounded has a worst-case reply length (`worst_case_chars`); the judge
  sizes ``max_tokens`` from it (`reply_token_budget`) so a judge that fills every field still closes
  its JSON, while small replies keep the configured floor.

Example::

    schema = json_schema_for(OutcomeVerdict)
    verdict = parse_reply('{"success": true, ...}', OutcomeVerdict)
"""
from __future__ import annotations

import json
import logging
import math
import re
import threading
from collections import OrderedDict
from decimal import Decimal
from functools import lru_cache
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import ConfigError

log = logging.getLogger("cua_verifier.judge")
T = TypeVar("T", bound=BaseModel)

_DROP_KEYS = {"title", "default"}
#: ``multipleOf`` given to float properties that do not set their own (two decimals).
FLOAT_STEP = 0.01
#: Conservative characters per token of a JSON reply (English prose is ~4; keys and digits fewer).
CHARS_PER_TOKEN = 3
#: Tokens added to the worst-case estimate (whitespace between tokens, tokenizer variance).
TOKEN_MARGIN = 256
#: Most values a stepped number may enumerate; beyond it ``multipleOf`` is dropped.
MAX_ENUM_VALUES = 256
#: Marks an array whose items must take each value of one enumerated property exactly once.
ONE_EACH = "x-one-each"
#: A pattern that is one repeated atom: a character class, an escape or a plain character.
_ONE_ATOM = re.compile(r"^\^(?P<atom>\[(?:\\.|[^\]\\])+\]|\\.|[^\\\[\](){}*+?|^$.])"
                       r"(?:(?P<plus>\+)|(?P<star>\*)|\{(?P<lo>\d+)(?:(?P<comma>,)(?P<hi>\d*))?\})\$$")
_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


class ReplyParseError(ValueError):
    """The reply is not valid JSON or violates the schema. `feedback` is shown to the model."""

    def __init__(self, feedback: str) -> None:
        self.feedback = feedback
        super().__init__(feedback)


def schema_name(model: type[BaseModel]) -> str:
    """A name accepted by ``response_format.json_schema.name`` (``^[a-zA-Z0-9_-]{1,64}$``)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", model.__name__)[:64] or "output"


def json_schema_for(model: type[BaseModel]) -> dict[str, Any]:
    """The strict-compatible, self-contained JSON schema of `model` (cached per class): the class's
    own ``wire_schema`` when it carries one (a per-call class whose schema `verifier.narrowing`
    derived from a per-rubric template, tested equal to `model_schema`), else `model_schema`.

    Raises:
        ConfigError: the model is recursive (cannot be inlined).
    """
    preset = model.__dict__.get("wire_schema")
    return preset if preset is not None else model_schema(model)


@lru_cache(maxsize=256)
def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`json_schema_for` computed from pydantic's schema of `model`, ignoring any ``wire_schema``."""
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    schema = _walk(_inline(raw, defs, ()), lambda n: _one_each(_portable(_step_float(_close_object(n)))))
    unbounded = unbounded_paths(schema)
    if unbounded:
        log.warning("output model %s has unbounded fields (a weak judge may never stop): %s",
                    model.__name__, ", ".join(unbounded[:8]))
    return schema


def _inline(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(x, defs, seen) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            raise ConfigError(f"output model is recursive through {name!r}; judge schemas must be finite")
        target = _inline(defs[name], defs, seen + (name,))
        extra = {k: _inline(v, defs, seen) for k, v in node.items() if k != "$ref" and k not in _DROP_KEYS}
        return {**target, **extra}
    out = {}
    for key, value in node.items():
        if key == "properties":  # property *names* may be "title"/"default": never drop those
            out[key] = {name: _inline(sub, defs, seen) for name, sub in value.items()}
        elif key not in _DROP_KEYS:
            out[key] = _inline(value, defs, seen)
    return out


def _walk(node: Any, fix: Any) -> Any:
    """Rebuild a schema bottom-up, applying `fix(node)` to every subschema dict.

    Property *names* are never treated as subschemas (a property may be called "type").
    """
    if isinstance(node, list):
        return [_walk(x, fix) for x in node]
    if not isinstance(node, dict):
        return node
    return fix({k: (_walk(v, fix) if k != "properties" else {p: _walk(s, fix) for p, s in v.items()})
                for k, v in node.items()})


def _close_object(node: dict[str, Any]) -> dict[str, Any]:
    """Every object: no extra keys, all properties required (strict mode's rules)."""
    if node.get("type") == "object" or "properties" in node:
        node["additionalProperties"] = False
        node["required"] = list(node.get("properties", {}))
    return node


def _step_float(node: dict[str, Any]) -> dict[str, Any]:
    """Every ``number`` gets ``multipleOf`` (bounded decimals); integers are left alone."""
    if node.get("type") == "number" and "multipleOf" not in node:
        node["multipleOf"] = FLOAT_STEP
    return node


def _portable(node: dict[str, Any]) -> dict[str, Any]:
    """Rewrite what some vLLM backend rejects (see the module docstring) into what all accept."""
    kinds = _types(node)
    if kinds & {"number", "integer"} and "multipleOf" in node:
        values = stepped_values(node)
        del node["multipleOf"]
        if values is not None:
            for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                node.pop(key, None)
            node["enum"] = values
    if "string" in kinds and "pattern" in node and {"minLength", "maxLength"} & node.keys():
        folded = fold_length(node["pattern"], node.get("minLength", 0), node.get("maxLength"))
        if folded is None:
            del node["pattern"]  # the output model still validates it
        else:
            node["pattern"] = folded
            node.pop("minLength", None)
            node.pop("maxLength", None)
    return node


def _one_each(node: dict[str, Any]) -> dict[str, Any]:
    """An array marked ``ONE_EACH`` -> ``prefixItems``, one per value of the marked property, in the
    enum's order (see the module docstring); the marker itself never reaches the wire."""
    key = node.pop(ONE_EACH, None)
    if key is None:
        return node
    item = node.get("items")
    values = item.get("properties", {}).get(key, {}).get("enum") if isinstance(item, dict) else None
    if not isinstance(item, dict) or not values or node.get("minItems") != len(values) or node.get("maxItems") != len(values):
        return node  # nothing to pin: the output model's validator alone checks the rule
    node["prefixItems"] = [{**item, "properties": {**item["properties"], key: {**item["properties"][key],
                                                                              "enum": [v]}}}
                           for v in values]
    return node


def _types(node: dict[str, Any]) -> set[str]:
    kind = node.get("type")
    return {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()


def stepped_values(node: dict[str, Any]) -> list[float] | list[int] | None:
    """Every multiple of ``multipleOf`` within the node's range, or None when the range is open
    or holds more than ``MAX_ENUM_VALUES`` values."""
    step = Decimal(str(node["multipleOf"]))
    lo = node.get("minimum", node.get("exclusiveMinimum"))
    hi = node.get("maximum", node.get("exclusiveMaximum"))
    if lo is None or hi is None or step <= 0:
        return None
    first = math.ceil(Decimal(str(lo)) / step)
    last = math.floor(Decimal(str(hi)) / step)
    if "exclusiveMinimum" in node and "minimum" not in node and first * step == Decimal(str(lo)):
        first += 1
    if "exclusiveMaximum" in node and "maximum" not in node and last * step == Decimal(str(hi)):
        last -= 1
    if last < first or last - first + 1 > MAX_ENUM_VALUES:
        return None
    if "integer" in _types(node) and step == step.to_integral_value():
        return [int(k * step) for k in range(first, last + 1)]
    return [float(k * step) for k in range(first, last + 1)]


def fold_length(pattern: str, min_length: int, max_length: int | None) -> str | None:
    """``^ATOM+$`` (or ``*``, ``{m,n}``) with length bounds -> ``^ATOM{lo,hi}$``; None when the
    pattern is not one repeated atom (its length is not the repetition count)."""
    match = _ONE_ATOM.match(pattern)
    if match is None:
        return None
    if match["plus"]:
        q_lo, q_hi = 1, None
    elif match["star"]:
        q_lo, q_hi = 0, None
    else:
        q_lo = int(match["lo"])
        q_hi = (int(match["hi"]) if match["hi"] else None) if match["comma"] else q_lo
    lo = max(q_lo, min_length)
    hi = q_hi if max_length is None else max_length if q_hi is None else min(q_hi, max_length)
    if hi is not None and hi < lo:
        return None
    return f"^{match['atom']}{{{lo},{'' if hi is None else hi}}}$"


def _pattern_max_length(schema: dict[str, Any]) -> int | None:
    """The most characters a one-atom ``{lo,hi}`` pattern admits (None: not bounded that way)."""
    match = _ONE_ATOM.match(schema.get("pattern", ""))
    if match is None or match["plus"] or match["star"]:
        return None
    return int(match["hi"]) if match["comma"] and match["hi"] else None if match["comma"] else int(match["lo"])


def _json_chars_per_char(pattern: str) -> int:
    """Most JSON characters one character of a one-atom pattern takes: 6 if it admits control
    characters (``\\uXXXX``), 2 if it admits a quote or backslash, else 1."""
    atom = re.compile(_ONE_ATOM.match(pattern)["atom"])  # type: ignore[index]
    if any(atom.fullmatch(chr(c)) for c in range(32)):
        return 6
    return 2 if atom.fullmatch('"') or atom.fullmatch("\\") else 1


def portability_problems(schema: Any, path: str = "$") -> list[str]:
    """What `schema` still holds that some vLLM structured-output backend rejects (xgrammar's list:
    numeric ``multipleOf``, a string ``pattern``/``format`` with length bounds, array
    ``uniqueItems``/``contains``, multi-branch ``allOf``). Empty for every `json_schema_for` result."""
    if isinstance(schema, list):
        return [p for item in schema for p in portability_problems(item, path)]
    if not isinstance(schema, dict):
        return []
    found, kinds = [], _types(schema)
    if kinds & {"number", "integer"} and "multipleOf" in schema:
        found.append(f"{path}: multipleOf")
    if "string" in kinds and {"pattern", "format"} & schema.keys() and {"minLength", "maxLength"} & schema.keys():
        found.append(f"{path}: pattern/format with a length bound")
    if "array" in kinds and {"uniqueItems", "contains", "minContains", "maxContains"} & schema.keys():
        found.append(f"{path}: array uniqueItems/contains")
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) >= 2:
        found.append(f"{path}: allOf with several branches")
    for key, value in schema.items():
        if key == "properties":
            for name, sub in value.items():
                found += portability_problems(sub, f"{path}.{name}")
        elif isinstance(value, (dict, list)):
            found += portability_problems(value, f"{path}[]" if key == "items" else path)
    return found


def unbounded_paths(schema: dict[str, Any], path: str = "$") -> list[str]:
    """Paths whose length constrained decoding cannot bound.

    Strings without maxLength/enum, arrays without maxItems, integers without a range, and floats
    without a range *and* ``multipleOf``: on vLLM (guidance backend) a random-weight judge answered
    a ``confidence`` in [0, 1] with ``1.000...`` until max_tokens; ``multipleOf`` (added by
    `json_schema_for`) bounds the decimals.
    """
    found: list[str] = [path] if _unbounded(schema) else []
    for name, sub in schema.get("properties", {}).items():
        found += unbounded_paths(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        found += unbounded_paths(schema["items"], f"{path}[]")
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            found += unbounded_paths(sub, path)
    return found


def _unbounded(schema: dict[str, Any]) -> bool:
    if "enum" in schema or "const" in schema:
        return False
    keys, kind = schema.keys(), schema.get("type")
    if kind == "string":
        return "maxLength" not in keys and _pattern_max_length(schema) is None
    if kind == "array":
        return "maxItems" not in keys
    ranged = bool({"maximum", "exclusiveMaximum"} & keys and {"minimum", "exclusiveMinimum"} & keys)
    if kind == "number":  # a range bounds the value, multipleOf the digits ("1.000000..." is in [0, 1])
        return not (ranged and "multipleOf" in keys)
    if kind == "integer":
        return not ranged
    return False


def worst_case_chars(schema: dict[str, Any]) -> int | None:
    """Length of the longest compact JSON reply `schema` admits (strings and lists full), or None
    when some path is unbounded (see `unbounded_paths`)."""
    if "enum" in schema or "const" in schema:
        return max(len(json.dumps(v)) for v in schema.get("enum", [schema.get("const")]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            sizes = [worst_case_chars(s) for s in schema[key]]
            return None if None in sizes else max(sizes)  # type: ignore[type-var]
    if _unbounded(schema) or "allOf" in schema:
        return None
    kind = schema.get("type")
    if kind == "string":
        if "maxLength" in schema:
            return schema["maxLength"] + 2
        return _json_chars_per_char(schema["pattern"]) * _pattern_max_length(schema) + 2  # type: ignore[operator]
    if kind in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum"))
        hi = schema.get("maximum", schema.get("exclusiveMaximum"))
        digits = max(len(str(int(lo))), len(str(int(hi))))
        if kind == "integer":
            return digits
        step = repr(float(schema["multipleOf"]))
        decimals = len(step.split(".")[1].rstrip("0")) if "e" not in step else 17
        return digits + 1 + decimals
    if kind == "array":
        item = worst_case_chars(schema["items"]) if isinstance(schema.get("items"), dict) else 0
        n = schema["maxItems"]
        return None if item is None else 2 + n * item + max(n - 1, 0)  # brackets, items, commas
    if kind == "object":
        props = schema.get("properties", {})
        sizes = [worst_case_chars(sub) for sub in props.values()]
        if None in sizes:
            return None
        return 2 + sum(len(json.dumps(k)) + 1 + v for k, v in zip(props, sizes)) + max(len(props) - 1, 0)
    return {"boolean": 5, "null": 4}.get(kind or "", None)


#: `worst_case_chars` of the schemas seen last, by identity (each held, so its id stays its own):
#: the stages ask with the same schema object (`json_schema_for` caches it per class) on every
#: call, and walking it cost ~50 us per judge request.
_WORST_CASE: OrderedDict[int, tuple[dict[str, Any], int | None]] = OrderedDict()
_WORST_CASE_SIZE = 256
_worst_case_lock = threading.Lock()


def _worst_case_of(schema: dict[str, Any]) -> int | None:
    """`worst_case_chars(schema)`, remembered for the last schema objects seen. A schema is not
    changed once built (`json_schema_for` hands out one object per class to every caller)."""
    with _worst_case_lock:
        hit = _WORST_CASE.get(id(schema))
        if hit is not None and hit[0] is schema:
            _WORST_CASE.move_to_end(id(schema))
            return hit[1]
    chars = worst_case_chars(schema)
    with _worst_case_lock:
        _WORST_CASE[id(schema)] = (schema, chars)
        while len(_WORST_CASE) > _WORST_CASE_SIZE:
            _WORST_CASE.popitem(last=False)
    return chars


def reply_token_budget(schema: dict[str, Any], *, floor: int, cap: int, room: int | None = None) -> int:
    """``max_tokens`` for one call: the worst-case reply of `schema` in tokens, plus a margin,
    at most `cap`, never below `floor` (the configured ``Sampling.max_tokens``), and never above
    `room` (``Sampling.reply_room``: what the prompt leaves of the context) when given.

    An unbounded schema has no worst case: it gets `cap` (or `floor` if larger).
    """
    chars = _worst_case_of(schema)
    need = cap if chars is None else -(-chars // CHARS_PER_TOKEN) + TOKEN_MARGIN
    size = max(floor, min(cap, need))
    return size if room is None else min(size, room)


def schema_instructions(model: type[BaseModel]) -> str:
    """System-prompt text for ``json_object`` mode, where the server does not enforce the schema."""
    return ("Reply with one JSON object and nothing else (no prose, no code fences). "
            "It must validate against this JSON schema:\n"
            + json.dumps(json_schema_for(model), separators=(",", ":")))


def strip_fences(text: str) -> str:
    """Remove a surrounding ```json ... ``` fence; otherwise keep the outermost {...} span."""
    match = _FENCE.match(text)
    if match:
        return match.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    return text[start:end + 1] if 0 <= start < end else text


def parse_reply(text: str, model: type[T], *, lenient: bool = False) -> T:
    """Parse the judge's reply into `model`.

    Args:
        text: the reply content.
        model: the output model.
        lenient: strip code fences / surrounding prose first (``json_object`` mode only; in
            json_schema mode prose around the JSON means the server ignored the schema).

    Raises:
        ReplyParseError: with feedback text suitable for a re-ask.
    """
    body = strip_fences(text) if lenient else text.strip()
    if not body:
        raise ReplyParseError("Your reply was empty. Reply with the JSON object only.")
    try:
        data = json.loads(body, strict=False)  # raw control chars inside strings are tolerated
    except json.JSONDecodeError as exc:
        raise ReplyParseError(f"Your reply is not valid JSON ({exc.msg} at line {exc.lineno} "
                              f"column {exc.colno}). Reply with the JSON object only.") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors(include_url=False)[:10])
        raise ReplyParseError(f"Your reply does not match the required schema: {problems}. "
                              "Reply again with the corrected JSON object only.") from exc
