"""Request bodies parsed once, from bytes, without a copy that outlives the parse.

Why not FastAPI's body parameter: Starlette keeps the raw body on the request object until the
response is sent, and ``json.loads`` on bytes first decodes them into a second full-size string.
With 64 requests of 17 MB of base64 screenshots each, those two copies were a third of the
service's memory. Here the body is streamed into one buffer, parsed straight from the bytes
(orjson when installed: about three times faster than ``json`` on data-URL bodies, and its strings
are the only copy), and the buffer is dropped before the verification starts.
"""
from __future__ import annotations

import asyncio
import binascii
import json
import random
import re
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError

from verifier.judge.jsonbody import JsonSafe

from .chunks import Chunks

try:  # optional: the service extra installs it
    import orjson

    def _loads(raw: bytes | list[bytes], on_image: Callable[[str, bytes], None] | None = None) -> Any:
        return lift_data_urls(raw, orjson.loads, on_image, JsonSafe)

    JSON_ERRORS: tuple[type[Exception], ...] = (orjson.JSONDecodeError, UnicodeDecodeError)
except ImportError:  # pragma: no cover - exercised only without the extra
    def _loads(raw: bytes | list[bytes], on_image: Callable[[str, bytes], None] | None = None) -> Any:
        return json.loads(raw if isinstance(raw, bytes) else b"".join(raw))

    JSON_ERRORS = (json.JSONDecodeError, UnicodeDecodeError)

try:  # optional (the service extra): validates a lifted data URL's payload at SIMD speed
    import pybase64 as b64
except ImportError:  # pragma: no cover - exercised only without the extra
    b64 = None  # type: ignore[assignment]

M = TypeVar("M", bound=BaseModel)


class BadBody(Exception):
    """The body is no JSON, or not the route's schema (answered 422 invalid_request)."""


async def read_body(request: Request) -> list[bytes]:
    """The whole body (already bounded by `BodyLimit`) as the chunks it arrived in: the parser reads
    them in place (`chunks.Chunks`), so a 41 MB body is never copied into one buffer; not cached
    on the request. (Starlette's stream ends with an empty chunk: left out.)"""
    return [chunk async for chunk in request.stream() if chunk]


_OPEN = b'"data:image/'
_HEAD = re.compile(rb"data:image/[A-Za-z0-9.+-]{1,40};base64,")
_HEAD_MAX = 64  # bytes that hold any head `_HEAD` matches


def lift_data_urls(raw: bytes | list[bytes], loads: Callable[[bytes], Any],
                   on_image: Callable[[str, bytes], None] | None = None, kind: type[str] = str) -> Any:
    """``loads(raw)``, with each image data URL string made straight from its bytes.

    Why: a JSON parser checks and copies every character of a string; on a 41 MB body of
    screenshots that was ~0.07 s per request, the largest share of the service's own parsing.
    A string is lifted out only where its value surely is its bytes: opened by an unescaped quote,
    a ``data:image/<type>;base64,`` head, and a payload that pybase64 validates (so no quote,
    backslash, control or non-ASCII character in it). Each is replaced by a short placeholder
    string (a random token per call), the rest is parsed by `loads`, and the texts are put back
    where their placeholders are (each exactly once, as values). Whatever does not fit that
    (a placeholder spelled by the body, one used as a key, a body the skeleton cannot parse) is
    parsed by `loads` as a whole: the result is always ``loads(raw)``'s, errors included.

    Validating a payload decodes it. `on_image(text, decoded)` is called with that work instead of
    throwing it away (once per distinct text: a text repeated in the body, such as a page that did
    not change, is put back as the same string object, held once). Texts it saw may end up unused
    (a body that falls back to a whole parse), so it keeps facts about them, not duties.

    Each lifted text is made as `kind` (a `str` subclass such as `JsonSafe`, which the texts are
    by construction: the service then sends them to the judge without a marked copy).
    """
    buf = Chunks(raw if isinstance(raw, list) else [raw])
    if b64 is None:
        return loads(buf.whole())
    token = f"\x1f{random.getrandbits(64):016x}:"
    quoted = json.dumps(token)[:-1]  # '"\u001f...:' (the control character escaped)
    pos = 0
    pieces: list[bytes | memoryview] = []
    lifted: list[str] = []
    texts: dict[tuple[int, bytes], list[str]] = {}  # (length, tail) -> distinct texts lifted
    start = buf.find(_OPEN)
    while start >= 0:
        end = buf.find(b'"', start + 1)
        if end < 0:
            break
        head = _HEAD.match(bytes(buf.slice(start + 1, min(end, start + 1 + _HEAD_MAX))))
        if head is not None and _unescaped(buf, start):
            text = _lift(buf, start, start + 1 + head.end(), end, texts, on_image, kind)
            if text is not None:
                pieces += [buf.slice(pos, start), f'{quoted}{len(lifted)}"'.encode()]
                lifted.append(text)
                pos = end + 1
        start = buf.find(_OPEN, end + 1)
    if not lifted:
        return loads(buf.whole())
    pieces.append(buf.slice(pos, buf.size))
    try:
        data = loads(b"".join(pieces))
    except Exception:  # noqa: BLE001 - the whole body's own error is the one to report
        return loads(buf.whole())
    return data if _put_back(data, token, lifted) else loads(buf.whole())


def _lift(buf: Chunks, start: int, payload: int, end: int, texts: dict[tuple[int, bytes], list[str]],
          on_image: Callable[[str, bytes], None] | None, kind: type[str]) -> str | None:
    """The string value between the quotes at `start` and `end` when it can be lifted (see
    `lift_data_urls`), else None. A text equal to one lifted before is that same object; only a
    new one is validated (decoded) and shown to `on_image`. The text's bytes are read where they
    lie (one chunk) or joined once (several), then decoded and copied while in cache."""
    key = (end - start, bytes(buf.slice(max(end - 64, payload), end)))
    raw = buf.slice(start + 1, end)
    text = None
    if key in texts:
        try:
            text = kind(raw, "ascii")
        except UnicodeDecodeError:
            return None
        for seen in texts[key]:
            if seen == text:
                return seen
    try:
        decoded = b64.b64decode(memoryview(raw)[payload - start - 1:], validate=True)
    except (binascii.Error, ValueError):
        return None
    text = text if text is not None else kind(raw, "ascii")
    texts.setdefault(key, []).append(text)
    if on_image is not None:
        on_image(text, decoded)
    return text


def _unescaped(buf: Chunks, at: int) -> bool:
    """The quote at `at` is preceded by an even number of backslashes (a real quote)."""
    k = at
    while k > 0 and buf.byte_at(k - 1) == 0x5C:
        k -= 1
    return (at - k) % 2 == 0


def _put_back(data: Any, token: str, lifted: list[str]) -> bool:
    """Replace each placeholder value in `data` (walked without recursion) by its text; True when
    every placeholder was found exactly once."""
    seen: set[int] = set()
    stack = [data]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if isinstance(value, str):
                if value.startswith(token):
                    index = int(value[len(token):])
                    if index in seen:
                        return False
                    seen.add(index)
                    node[key] = lifted[index]
            elif isinstance(value, (dict, list)):
                stack.append(value)
    return len(seen) == len(lifted)


def parse_json(raw: bytes | list[bytes], on_image: Callable[[str, bytes], None] | None = None) -> Any:
    """The body's JSON (`BadBody` if it is none); `on_image` as in `lift_data_urls`."""
    try:
        return _loads(raw, on_image)
    except JSON_ERRORS as exc:
        raise BadBody(f"request body is not valid JSON: {exc}") from None


async def read_model(request: Request, model: type[M],
                     on_image: Callable[[str, bytes], None] | None = None) -> M:
    """The body as `model`; the raw bytes are released before this returns. The parse runs on a
    worker thread: tens of milliseconds for a 41 MB body (more with `on_image` hashing), which
    would otherwise stall every other connection's reads."""
    raw = await read_body(request)
    data = await asyncio.to_thread(parse_json, raw, on_image)
    del raw
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "body"
        raise BadBody(f"{where}: {err['msg']}") from None
