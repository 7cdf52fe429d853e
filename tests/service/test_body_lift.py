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
    assert asyncio.run(read_body(request)) is raw  # Starlette's trailing b"" once made a 41 MB join
    two = iter([{"type": "http.request", "body": b"ab", "more_body": True},
                {"type": "http.request", "body": b"cd", "more_body": False}])

    async def receive_two():
        return next(two)

    assert asyncio.run(read_body(Request({"type": "http", "method": "POST", "path": "/", "headers": []},
                                         receive_two))) == b"abcd"
