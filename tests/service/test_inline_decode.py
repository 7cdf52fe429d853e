"""Inline screenshots are decoded once, by the body parser, and their facts reach the trajectory."""
from __future__ import annotations

import base64
import json

import pytest

orjson = pytest.importorskip("orjson")
pytest.importorskip("pybase64")
pytest.importorskip("fastapi")

from serving.perf.loadtest import png
from serving.reward_service import body as body_mod
from serving.reward_service.core import parse_trajectory
from serving.reward_service.inline import DecodedImages
from verifier import trajectory as traj_mod
from verifier.errors import ScreenshotError
from verifier.judge import images
from verifier.trajectory import Screenshot


def url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def flipped(data: bytes) -> bytes:
    out = bytearray(data)
    out[data.index(b"IDAT") + 8] ^= 1  # the header reads, the chunk's CRC fails
    return bytes(out)


def record(*urls: str) -> bytes:
    shots = [{"step": 1, "timing": "after", "data_url": u} for u in urls]
    return json.dumps({"trajectory": {"task": {"id": "t", "instruction": "find it"}, "final_answer": "x",
                                      "steps": [{"index": 1, "action": "click"}], "screenshots": shots}}).encode()


def parsed(raw: bytes, decoded: DecodedImages | None):
    data = body_mod.parse_json(raw, decoded)
    return parse_trajectory(data["trajectory"], None, where="trajectories[0]", decoded=decoded)


def test_each_distinct_text_is_decoded_once_and_its_facts_are_the_screenshots_own(monkeypatch):
    a, b = png((1, 2, 3), (41, 31)), png((9, 8, 7), (21, 11))  # sizes no other test uses: no cached verdict
    raw = record(url(a), url(b), url(a), url(flipped(b)))
    seen: list[bytes] = []
    lifted = body_mod.lift_data_urls(raw, orjson.loads, lambda text, data: seen.append(data))
    assert lifted == orjson.loads(raw) and seen == [a, b, flipped(b)]  # the repeat is not decoded again
    shots = lifted["trajectory"]["screenshots"]
    assert shots[0]["data_url"] is shots[2]["data_url"]  # and its text is held once

    decoded, checked = DecodedImages(), []
    real_check = images._check
    monkeypatch.setattr(traj_mod, "b64decode_checked", lambda payload: pytest.fail("decoded a second time"))
    monkeypatch.setattr(images, "_check", lambda data: checked.append(data) or real_check(data))
    traj = parsed(raw, decoded)
    assert len(decoded) == 3 and checked == [a, b, flipped(b)]  # verified on the parser's bytes, once each
    monkeypatch.undo()
    for shot, data in zip(traj.screenshots, [a, b, a, flipped(b)]):
        fresh = Screenshot.from_data_url(url(data), step=1)
        assert shot.known() == fresh.known() and shot.known_sha256 == fresh.sha256
    # the verdict was decided on the parser's bytes: the broken one is refused without a decode
    bad = traj.screenshots[3]
    assert images.image_verdict(bad.sha256, lambda: pytest.fail("decoded")) is not None
    assert images.image_verdict(traj.screenshots[1].sha256, lambda: pytest.fail("decoded")) is None


def test_without_the_parsers_bytes_the_screenshots_are_decoded_as_before(monkeypatch):
    calls: list[int] = []
    real = traj_mod.b64decode_checked
    monkeypatch.setattr(traj_mod, "b64decode_checked", lambda p: calls.append(1) or real(p))
    a = png((3, 3, 3), (12, 12))
    traj = parsed(record(url(a)), None)
    assert calls == [1] and traj.screenshots[0].known() == Screenshot.from_bytes(a, step=1).known()


@pytest.mark.parametrize("payload, reason", [(b"not an image at all" * 50, "not a readable image"),
                                             (png((1, 1, 1), (9000, 9000)), "pixel limit")])
def test_a_text_that_is_no_usable_image_gets_no_facts_and_fails_with_its_place(payload, reason, monkeypatch):
    monkeypatch.setattr(traj_mod, "MAX_SCREENSHOT_PIXELS", 10_000_000)
    monkeypatch.setattr(Screenshot.size, "__kwdefaults__", {"max_pixels": 10_000_000})
    decoded = DecodedImages()
    with pytest.raises(ScreenshotError, match=rf"screenshot 2 of 2 .*{reason}") as err:
        parsed(record(url(png((5, 5, 5))), url(payload)), decoded)
    assert len(decoded) == 1 and err.value.field == "screenshots[1]"


def test_over_the_byte_guard_no_facts_are_kept(monkeypatch):
    from serving.reward_service import inline

    monkeypatch.setattr(inline, "MAX_SCREENSHOT_BYTES", 100)
    decoded = DecodedImages()
    decoded("text", png((1, 2, 3), (64, 64)))
    assert len(decoded) == 0


def test_the_verify_route_hands_the_parsers_facts_to_the_service(monkeypatch):
    from starlette.testclient import TestClient

    from serving.reward_service.app import create_app
    from serving.reward_service.config import ServiceConfig
    from serving.reward_service.models import ItemResult
    from verifier.settings import RewardSettings

    app = create_app(RewardSettings(judge={"base_urls": ["http://127.0.0.1:9"], "model": "m"}), ServiceConfig())
    got: list[DecodedImages | None] = []

    async def verify_records(records, deadline_s, decoded=None):
        got.append(decoded)
        parse_trajectory(records[0], None, where="trajectories[0]", decoded=decoded)
        return [ItemResult(status="scored", http_status=200, result={"ok": True})]

    inner = app
    while not hasattr(inner, "state") and hasattr(inner, "app"):
        inner = inner.app
    monkeypatch.setattr(inner.state.service, "verify_records", verify_records)
    with TestClient(app) as client:
        r = client.post("/v1/verify", content=record(url(png((4, 4, 4)))))
    assert r.status_code == 200, r.text
    assert isinstance(got[0], DecodedImages) and len(got[0]) == 1


def test_lifted_texts_reach_the_judge_request_without_a_marked_copy():
    """The parser makes each data URL a `JsonSafe` text and the trajectory keeps that very object,
    so the pass-through to the judge is the text itself (it was a 1 MB copy per screenshot)."""
    from verifier.judge.images import passed_data_url
    from verifier.judge.jsonbody import JsonSafe

    decoded = DecodedImages()
    traj = parsed(record(url(png((6, 7, 8), (23, 13)))), decoded)
    shot = traj.screenshots[0]
    assert type(shot.data_url) is JsonSafe
    text = shot.data_url
    assert passed_data_url(shot, "image/png") is text and shot.data_url is text
    # anything else given as a string is kept as given, a plain str stays a plain str
    plain = url(png((6, 7, 9)))
    assert type(Screenshot(step=0, data_url=plain).data_url) is str
    assert Screenshot.model_validate_json(Screenshot(step=0, data_url=plain).model_dump_json()).data_url == plain
