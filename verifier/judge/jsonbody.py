"""The request body as JSON bytes, without re-escaping the screenshots on every call.

Why: a real 1440x900 screenshot is a ~1-2 MB base64 data URL, and each one goes into several
requests (relevance, evidence, rescoring, outcome). ``json.dumps`` scans and copies every string it
writes (~4 ms per MB here), and a body whose text holds one non-ASCII character becomes a wide
string that costs as much again to encode: with real screenshots this was the largest share of
the client's CPU. A data URL is JSON-safe by construction (``data:<mime>;base64,`` + the base64
alphabet: no quote, backslash or control character), so `ImageEncoder` marks it once as `JsonSafe`
and `dumps_body` copies its bytes between quotes instead of escaping it again.

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


#: Types `body_pieces` passes through as they are (no image, no float to check).
_LEAVES = frozenset({str, int, bool, type(None)})


class JsonSafe(str):
    """A string that needs no JSON escaping (ASCII, no ``"``, ``\\`` or control characters).

    Only code that built the string knows this (checking costs as much as escaping), so only the
    image encoder creates them; everywhere else it behaves as the plain string it is.
    """


def dumps(value: Any) -> str:
    """The SDK's JSON settings (compact, UTF-8 kept, no NaN)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps_body(body: dict[str, Any]) -> bytes:
    """`body` as the SDK would serialise it, with each `JsonSafe` string spliced in as it is."""
    return b"".join(body_pieces(body))


def body_pieces(body: dict[str, Any]) -> list[bytes]:
    """`dumps_body(body)` as the list of pieces it joins: the HTTP client writes them one after
    the other (`http.PiecesPayload`), so a request of many screenshots is never copied into one
    buffer first (~0.4 ms per MB here, ~60 MB per verification at M = 50).

    The body is serialised once with a short placeholder per `JsonSafe` string (a random token
    drawn after the body was built, so no text in it is likely to spell one; if one did, the count
    check sees it and the plain serialisation is used), then the strings' bytes are joined in
    between.
    """
    token = f"\x1f{random.getrandbits(64):016x}:"  # a control character: escaped in the JSON, never raw
    safe: list[str] = []
    plain = orjson is None

    def swap(node: Any) -> Any:
        nonlocal plain
        kind = type(node)
        if kind in _LEAVES:  # most nodes (their exact types, checked inline: a walk per judge request)
            return node
        if isinstance(node, dict):
            return {k: v if type(v) in _LEAVES else swap(v) for k, v in node.items()}
        if isinstance(node, (list, tuple)):
            return [v if type(v) in _LEAVES else swap(v) for v in node]
        if kind is JsonSafe:
            safe.append(node)
            return f"{token}{len(safe) - 1}"
        if kind is float:
            if not math.isfinite(node):
                raise ValueError(f"Out of range float values are not JSON compliant: {node!r}")
            plain = plain or "e" in repr(node)  # orjson writes 2.5e-7 where json writes 2.5e-07
        return node

    skeleton = _skeleton(swap(body), plain)
    if not safe:
        return [skeleton]
    head, *rest = skeleton.split(b'"' + _skeleton(token, plain)[1:-1])  # each rest piece: b'<index>"...'
    if len(rest) != len(safe):
        return [dumps(body).encode()]  # pragma: no cover - a text that spells the token
    out = [head]
    for piece in rest:
        index, _, tail = piece.partition(b'"')
        out += (b'"', safe[int(index)].encode("ascii"), b'"' + tail)
    return out


def _skeleton(value: Any, plain: bool) -> bytes:
    """``dumps(value).encode()``, by orjson where its bytes are surely the same: UTF-8 kept,
    compact, the same escapes. It refuses what ``json`` would write its own way (keys that are not
    strings, integers over 64 bits, lone surrogates, other types), and floats in exponent form are
    spelled differently: those go through ``json``."""
    if not plain:
        try:
            return orjson.dumps(value)
        except TypeError:  # orjson.JSONEncodeError: json decides (and raises its own error)
            pass
    return dumps(value).encode()
