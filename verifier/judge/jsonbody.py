"""The request body as JSON bytes, without re-escaping the screenshots on every call.

Why: a real 1440x900 screenshot is a ~1-2 MB base64 data URL, and each one goes into several
requests (relevance, evidence, rescoring, outcome). ``json.dumps`` scans and copies every string it
writes (~4 ms per MB here), and a body whose text holds one non-ASCII character becomes a wide
string that costs as much again to encode: with real screenshots this was the largest share of
the client's CPU.

Two ways around it, by what is installed:
- orjson (the service extra) writes the whole body itself: it copies a megabyte of base64 at memory
  speed and finds nothing to escape (0.42 ms for a request of one 1.8 MB screenshot, as fast as the
  splice below), so data URLs need no marking at all (`mark_safe` returns them as they are).
- Otherwise a data URL, JSON-safe by construction (``data:<mime>;base64,`` + the base64 alphabet: no
  quote, backslash or control character), is marked once as `JsonSafe` by the image encoder, and
  `body_pieces` copies its bytes between quotes instead of letting ``json`` escape it again.

`dumps_body(body)` is byte-for-byte ``json.dumps(body, ensure_ascii=False, separators=(",", ":"),
allow_nan=False).encode()``: what the SDK itself would send (its ``openapi_dumps``).
"""
from __future__ import annotations

import json
import math
import random
from typing import Any

try:  # optional (the service extra): ~10x faster than json on the prompts' text
    import orjson
except ImportError:  # pragma: no cover - exercised only without the extra
    orjson = None  # type: ignore[assignment]


class JsonSafe(str):
    """A string that needs no JSON escaping (ASCII, no ``"``, ``\\`` or control characters).

    Only code that built the string knows this (checking costs as much as escaping), so only the
    image encoder creates them (`mark_safe`); everywhere else it behaves as the plain string it is.
    """


def mark_safe(text: str) -> str:
    """`text`, which the caller built or validated to be JSON-safe, as the serialiser should get it:
    a `JsonSafe` for the ``json`` path; as it is when orjson serialises (marking would copy it: a
    `str` subclass is always a new object, and orjson gains nothing from it)."""
    return text if orjson is not None else JsonSafe(text)


def dumps(value: Any) -> str:
    """The SDK's JSON settings (compact, UTF-8 kept, no NaN)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps_body(body: dict[str, Any]) -> bytes:
    """`body` as the SDK would serialise it."""
    return b"".join(body_pieces(body))


def body_pieces(body: dict[str, Any]) -> list[bytes]:
    """`dumps_body(body)` as the list of pieces it joins: the HTTP client writes them one after
    the other (`http.PiecesPayload`), so a request of many screenshots is never copied into one
    buffer first (~0.4 ms per MB here, ~60 MB per verification at M = 50).

    orjson's bytes are used where they surely are json's: it spells floats in exponent form
    differently (``2.5e-7`` against ``2.5e-07``) and refuses what json writes its own way (keys that
    are not strings, integers over 64 bits, lone surrogates, other types): those go through json.
    """
    if orjson is not None and _orjson_spells_as_json(body):
        try:
            return [orjson.dumps(body)]
        except TypeError:  # orjson.JSONEncodeError: json decides (and raises its own error)
            pass
    return _spliced(body)


def _orjson_spells_as_json(node: Any) -> bool:
    """No float that either serialiser spells its own way (non-finite: json refuses them, orjson
    writes null; exponent form: spelled differently)."""
    stack = [node]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif type(value) is float and (not math.isfinite(value) or "e" in repr(value)):
            return False
    return True


def _spliced(body: dict[str, Any]) -> list[bytes]:
    """The ``json`` path: serialised once with a short placeholder per `JsonSafe` string (a random
    token drawn after the body was built, so no text in it is likely to spell one; if one did, the
    count check sees it and the plain serialisation is used), then the strings' bytes are joined in
    between."""
    token = f"\x1f{random.getrandbits(64):016x}:"  # a control character: escaped in the JSON, never raw
    safe: list[str] = []

    def swap(node: Any) -> Any:
        if type(node) is JsonSafe:
            safe.append(node)
            return f"{token}{len(safe) - 1}"
        if isinstance(node, dict):
            return {k: swap(v) for k, v in node.items()}
        if isinstance(node, (list, tuple)):
            return [swap(v) for v in node]
        return node

    skeleton = dumps(swap(body))
    if not safe:
        return [skeleton.encode()]
    head, *rest = skeleton.split(f'"{dumps(token)[1:-1]}')  # each rest piece: '<index>"...'
    if len(rest) != len(safe):
        return [dumps(body).encode()]  # pragma: no cover - a text that spells the token
    out = [head.encode()]
    for piece in rest:
        index, _, tail = piece.partition('"')
        out += (b'"', safe[int(index)].encode("ascii"), f'"{tail}'.encode())
    return out
