"""Data URLs lifted out of request bodies before JSON parsing: always the parser's own result."""
from __future__ import annotations

import base64
import json

import pytest

orjson = pytest.importorskip("orjson")
pytest.importorskip("pybase64")

from serving.reward_service import body as body_mod
from serving.reward_service.body import BadBody, lift_data_urls, parse_json

URL = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 40).decode()


def outcome(fn, raw: bytes):
    try:
        return ("ok", fn(raw))
    except (orjson.JSONDecodeError, UnicodeDecodeError) as exc:
        return ("error", type(exc).__name__)


BODIES = {
    "trajectory": json.dumps({"trajectory": {"screenshots": [{"data_url": URL}, {"data_url": URL}],
                                             "task": {"id": "t", "instruction": "x"}}}).encode(),
    "escaped quote before": json.dumps({"a": f'see "{URL}" here', "b": [URL]}).encode(),
    "escaped quote opening": json.dumps({"a": f'see "{URL}', "b": URL}).encode(),
    "escaped backslash before": ('{"a": "x\\\\", "b": "' + URL + '"}').encode(),
    "as a key": json.dumps({URL: 1, "v": URL}).encode(),
    "bad base64": json.dumps({"a": URL[:-8] + "!!!!AAAA", "b": URL}).encode(),
    "control character": ('{"a": "' + URL[:40] + "\n" + URL[40:] + '"}').encode(),
    "escape in payload": ('{"a": "' + URL[:40] + "\\u0041" + URL[40:] + '"}').encode(),
    "closing quote": ('{"a": "x"' + URL[:30] + '", "b": "' + URL + '"}').encode(),
    "cut": json.dumps({"a": URL}).encode()[:-5],
    "non-ascii around": json.dumps({"é": URL, "ü": ["ß", URL]}, ensure_ascii=False).encode(),
    "invalid utf-8 elsewhere": b'{"a": "\xff", "b": "' + URL.encode() + b'"}',
    "deep": ("[" * 200 + json.dumps(URL) + "]" * 200).encode(),
    "top-level string": json.dumps(URL).encode(),
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_the_result_is_the_parsers_own(name):
    raw = BODIES[name]
    assert outcome(lambda r: lift_data_urls(r, orjson.loads), raw) == outcome(orjson.loads, raw)


def test_the_big_strings_are_not_parsed_and_a_spelled_placeholder_falls_back(monkeypatch):
    seen: list[int] = []

    def loads(raw: bytes):
        seen.append(len(raw))
        return orjson.loads(raw)

    raw = BODIES["trajectory"]
    assert lift_data_urls(raw, loads) == orjson.loads(raw) and seen == [seen[0]] and seen[0] < 300
    monkeypatch.setattr(body_mod.random, "getrandbits", lambda bits: 0xABC)
    token = "\x1f" + f"{0xABC:016x}:0"
    spelled = json.dumps({"a": URL, "b": token}).encode()
    seen.clear()
    assert lift_data_urls(spelled, loads) == orjson.loads(spelled) and len(seen) == 2  # the whole body again


def test_service_parse_reports_bad_json_as_before():
    with pytest.raises(BadBody, match="not valid JSON"):
        parse_json(BODIES["cut"])
    assert parse_json(BODIES["trajectory"])["trajectory"]["screenshots"][1]["data_url"] == URL


def test_a_body_replayed_in_one_message_is_returned_without_a_copy():
    import asyncio

    from starlette.requests import Request

    from serving.reward_service.body import read_body

    raw = BODIES["trajectory"]
    messages = iter([{"type": "http.request", "body": raw, "more_body": False}])

    async def receive():
        return next(messages)

    request = Request({"type": "http", "method": "POST", "path": "/", "headers": []}, receive)
    (chunk,) = asyncio.run(read_body(request))  # Starlette's trailing b"" once made a 41 MB join
    assert chunk is raw
    two = iter([{"type": "http.request", "body": b"ab", "more_body": True},
                {"type": "http.request", "body": b"cd", "more_body": False}])

    async def receive_two():
        return next(two)

    assert asyncio.run(read_body(Request({"type": "http", "method": "POST", "path": "/", "headers": []},
                                         receive_two))) == [b"ab", b"cd"]


def split(raw: bytes, sizes: list[int]) -> list[bytes]:
    """`raw` cut into chunks of the given sizes, cycled."""
    out, pos, k = [], 0, 0
    while pos < len(raw):
        out.append(raw[pos:pos + sizes[k % len(sizes)]])
        pos += sizes[k % len(sizes)]
        k += 1
    return out


CUTS = {"one byte": [1], "odd": [7, 3, 11], "head-sized": [12, 64], "uvicorn-like": [65536], "ragged": [5000, 1, 2, 13]}


@pytest.mark.parametrize("cut", sorted(CUTS))
@pytest.mark.parametrize("name", sorted(BODIES))
def test_a_body_in_chunks_parses_as_the_joined_body(name, cut):
    """The parser reads the chunks a body arrived in without joining them: any cut, even through a
    data URL's opening quote, its head, an escape or the closing quote, gives the joined body's
    result (and the same texts and decoded images seen)."""
    raw = BODIES[name]
    seen_whole: list[tuple[str, bytes]] = []
    seen_parts: list[tuple[str, bytes]] = []
    whole = outcome(lambda r: lift_data_urls(r, orjson.loads, lambda t, d: seen_whole.append((t, d))), raw)
    parts = outcome(lambda r: lift_data_urls(split(r, CUTS[cut]), orjson.loads,
                                             lambda t, d: seen_parts.append((t, d))), raw)
    assert parts == whole == outcome(orjson.loads, raw)
    assert seen_parts == seen_whole


def test_chunks_find_and_slice_agree_with_bytes():
    from serving.reward_service.chunks import Chunks

    raw = b'ab"data:image/png;base64,QUJD"x\\"data:im' * 3
    for sizes in ([1], [2, 5], [4096], [3, 1, 9]):
        buf = Chunks(split(raw, sizes))
        for sub in (b'"data:image/', b'"', b"QUJD", b"nowhere"):
            for start in range(0, len(raw) + 2, 3):
                assert buf.find(sub, start) == raw.find(sub, start), (sizes, sub, start)
        for a, b in [(0, len(raw)), (3, 40), (10, 11), (5, 5), (len(raw) - 4, len(raw) + 9)]:
            assert bytes(buf.slice(a, b)) == raw[a:b]
        assert [buf.byte_at(i) for i in range(len(raw))] == list(raw)
        assert buf.whole() == raw
    assert Chunks([]).whole() == b"" and Chunks([]).find(b"x") == -1
