"""Downscaling math, the once-per-content-hash encoder, pass-through, file references and uuids."""
from __future__ import annotations

import base64
import hashlib
import io
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

import pytest
from PIL import Image

from verifier.errors import ScreenshotError
from verifier.judge.images import ImageEncoder, target_size
from verifier.trajectory import Screenshot


def png(w: int, h: int, color=(200, 30, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), color).save(buf, format="PNG")
    return buf.getvalue()


def decode(url: str) -> Image.Image:
    head, _, payload = url.partition(",")
    assert head.startswith("data:image/") and head.endswith(";base64")
    return Image.open(io.BytesIO(base64.b64decode(payload)))


@pytest.mark.parametrize("size,max_side,max_pixels,expected", [
    ((1920, 1080), 1280, None, (1280, 720)),
    ((1080, 1920), 1280, None, (720, 1280)),
    ((1000, 1000), None, 10_000, (100, 100)),
    ((1920, 1080), 1280, 230_400, (640, 360)),  # the pixel limit is the tighter one
    ((800, 600), 1280, 1_000_000, (800, 600)),  # never upscaled
    ((5000, 3), 100, None, (100, 1)),  # never collapses to zero
])
def test_target_size(size, max_side, max_pixels, expected):
    w, h = target_size(*size, max_side, max_pixels)
    assert (w, h) == expected
    if max_pixels:
        assert w * h <= max_pixels


def test_encoder_downscales_and_encodes_once_per_hash():
    enc = ImageEncoder(max_side=500, max_pixels=None, fmt="png")
    a = Screenshot.from_bytes(png(2000, 1000), step=1)
    a_again = Screenshot.from_bytes(png(2000, 1000), step=7)  # same bytes, different object
    b = Screenshot.from_bytes(png(2000, 1000, color=(0, 0, 255)), step=2)
    first = enc.encode(a)
    assert (first.width, first.height) == (500, 250)
    assert decode(first.data_url).size == (500, 250)
    assert enc.encode(a_again) is first
    enc.encode(b)
    assert enc.encodes == 2


def test_lru_evicts_oldest():
    enc = ImageEncoder(max_side=64, cache_size=1)
    a, b = Screenshot.from_bytes(png(10, 10), step=1), Screenshot.from_bytes(png(11, 11), step=1)
    enc.encode(a), enc.encode(b), enc.encode(a)
    assert enc.prepared == 3 and enc.encodes == 0  # small PNGs: prepared, never re-encoded


def test_small_png_is_sent_as_original_bytes_and_jpeg_converts():
    raw = png(40, 30)
    shot = Screenshot.from_bytes(raw, step=1)
    url = ImageEncoder(max_side=100, fmt="png").encode(shot).data_url
    assert base64.b64decode(url.split(",", 1)[1]) == raw
    jpeg = ImageEncoder(max_side=20, fmt="jpeg").encode(Screenshot.from_bytes(raw, step=1))
    assert jpeg.data_url.startswith("data:image/jpeg;base64,")
    img = decode(jpeg.data_url)
    assert img.format == "JPEG" and img.size == (20, 15)


def test_rgba_to_jpeg_and_corrupt_input():
    buf = io.BytesIO()
    Image.new("RGBA", (50, 50), (1, 2, 3, 100)).save(buf, format="PNG")
    out = ImageEncoder(max_side=25, fmt="jpeg").encode(Screenshot.from_bytes(buf.getvalue(), step=1))
    assert decode(out.data_url).mode == "RGB"
    with pytest.raises(ScreenshotError):
        ImageEncoder().encode(Screenshot.from_bytes(b"not an image", step=1))


def test_concurrent_encodes_of_one_screenshot_run_once():
    from concurrent.futures import ThreadPoolExecutor

    enc = ImageEncoder(max_side=300)
    raw = png(1200, 900)
    shots = [Screenshot.from_bytes(raw, step=k) for k in range(1, 17)]  # 16 copies, one content hash
    with ThreadPoolExecutor(max_workers=16) as pool:
        urls = {r.data_url for r in pool.map(enc.encode, shots)}
    assert len(urls) == 1 and enc.encodes == 1


def jpeg_bytes(w: int, h: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (10, 120, 200)).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def payload(url: str) -> bytes:
    return base64.b64decode(url.split(",", 1)[1])


def test_within_limits_is_sent_as_is_without_decoding_pixels(monkeypatch):
    """A screenshot within the limits is never decoded: only its header is read."""
    def no_decode(self, **kw):
        raise AssertionError("pixels decoded for a screenshot within the limits")

    monkeypatch.setattr(Screenshot, "image", no_decode)
    raw_png, raw_jpeg = png(1440, 900), jpeg_bytes(640, 400)
    enc = ImageEncoder(max_side=None, max_pixels=1_310_720, fmt="png")
    a = enc.encode(Screenshot.from_bytes(raw_png, step=1))
    b = enc.encode(Screenshot.from_bytes(raw_jpeg, step=2))  # JPEG stays JPEG although fmt is png
    assert payload(a.url) == raw_png and a.url.startswith("data:image/png;base64,")
    assert payload(b.url) == raw_jpeg and b.url.startswith("data:image/jpeg;base64,")
    assert a.passed_through and b.passed_through and enc.encodes == 0 and enc.prepared == 2
    assert (a.width, a.height) == (1440, 900)


def test_uuid_is_the_hash_of_the_bytes_sent():
    """vLLM caches processed images by uuid: it must name what was sent, not the source."""
    raw = png(2000, 1000)
    small = ImageEncoder(max_side=500).encode(Screenshot.from_bytes(raw, step=1))
    large = ImageEncoder(max_side=1000).encode(Screenshot.from_bytes(raw, step=1))
    for image in (small, large):
        assert image.sha256 == hashlib.sha256(payload(image.url)).hexdigest()
        assert image.source_sha256 == hashlib.sha256(raw).hexdigest()
    assert small.sha256 != large.sha256  # two settings, two server cache entries
    kept = ImageEncoder(max_side=None).encode(Screenshot.from_bytes(raw, step=1))
    assert kept.passed_through and kept.sha256 == kept.source_sha256


def test_render_chat_sends_the_uuid_of_the_bytes_in_the_url():
    from verifier.judge.base import ImagePart, Message
    from verifier.judge.wire import render_chat

    shot = Screenshot.from_bytes(png(1600, 1000), step=1)
    msgs = render_chat([Message.user("look", ImagePart(screenshot=shot, label="Screenshot 1"))],
                       ImageEncoder(max_side=800), image_uuid=True)
    item = msgs[0]["content"][2]
    assert item["type"] == "image_url"
    assert item["uuid"] == hashlib.sha256(payload(item["image_url"]["url"])).hexdigest() != shot.sha256


def test_media_dir_sends_file_urls_written_once(tmp_path):
    raw = png(300, 200)
    enc = ImageEncoder(max_side=None, media_dir=tmp_path / "media")
    image = enc.encode(Screenshot.from_bytes(raw, step=1))
    assert image.url.startswith("file://")
    path = Path(url2pathname(urlsplit(image.url).path))
    assert path.parent == (tmp_path / "media").resolve() and path.read_bytes() == raw
    assert path.name == f"{image.sha256}.png"
    again = ImageEncoder(max_side=None, media_dir=tmp_path / "media").encode(Screenshot.from_bytes(raw, step=4))
    assert again.url == image.url and sorted(p.name for p in path.parent.iterdir()) == [path.name]
    resized = ImageEncoder(max_side=100, fmt="jpeg", media_dir=tmp_path / "media").encode(
        Screenshot.from_bytes(raw, step=1))
    assert resized.url.endswith(".jpg")
    assert Image.open(Path(url2pathname(urlsplit(resized.url).path))).size == (100, 66)


# ---- broken screenshots are refused once, with a reason (issue 20 §7) ---------------------------
def broken_pngs() -> dict[str, bytes]:
    good = png(64, 48, (10, 120, 200))
    idat = good.index(b"IDAT")
    flipped = bytearray(good)
    flipped[idat + 8] ^= 0x01  # one bit of the compressed pixels (the chunk's CRC no longer matches)
    return {"truncated": good[: len(good) * 2 // 3], "bit_flipped": bytes(flipped),
            "no_end": good[: good.index(b"IEND") - 4]}


@pytest.mark.parametrize("kind", sorted(broken_pngs()))
def test_verify_image_bytes_names_what_is_wrong_and_decides_once_per_hash(kind, monkeypatch):
    from verifier.judge import images

    bad, good = broken_pngs()[kind], png(64, 48, (10, 120, 200))
    assert images.verify_image_bytes(good) is None
    assert images.verify_image_bytes(jpeg_bytes(32, 32)) is None
    reason = images.verify_image_bytes(bad)
    assert reason and isinstance(reason, str)
    monkeypatch.setattr(images, "_check", lambda data: pytest.fail("verified twice"))
    assert images.verify_image_bytes(bad) == reason and images.verify_image_bytes(good) is None


@pytest.mark.parametrize("kind", sorted(broken_pngs()))
def test_a_broken_png_within_the_limits_is_refused_not_passed_through(kind):
    """The header of a truncated or bit-flipped PNG reads fine, so it used to be sent to the judge
    as it was; the encoder now verifies the bytes it passes through."""
    bad = broken_pngs()[kind]
    shot = Screenshot.from_bytes(bad, step=3)
    assert shot.size() == (64, 48)  # the header check alone lets it through
    enc = ImageEncoder(max_side=None, max_pixels=1_310_720)
    with pytest.raises(ScreenshotError, match="step 3.*not a readable image"):
        enc.encode(shot)
    assert enc.prepared == 0


async def test_a_broken_png_makes_its_rollout_unscored_with_the_reason(server):
    """Through the pipeline against a real loopback judge: the rollout with a truncated screenshot is
    unscored, the reason names the screenshot; the same rollout with the whole file is scored."""
    from judge_server import echo

    from verifier.session import VerifierSession
    from verifier.settings import RewardSettings
    from verifier.trajectory import Step, Task, Trajectory

    server.default = echo

    def rollout(last: bytes) -> Trajectory:
        return Trajectory(task=Task(id="t", instruction="Open the pricing page"),
                          steps=[Step(index=1, action="click", arguments={"x": 1, "y": 2})],
                          screenshots=[Screenshot.from_bytes(png(64, 48, (1, 2, 3)), step=0),
                                       Screenshot.from_bytes(last, step=1, timing="after")],
                          final_answer="done")

    session = VerifierSession(RewardSettings(judge={"base_urls": [server.url], "model": "judge",
                                                    "backoff_initial_s": 0.01}))
    try:
        good = await session.verify(rollout(png(64, 48, (10, 120, 200))))
        bad = await session.verify(rollout(broken_pngs()["truncated"]))
    finally:
        await session.aclose()
    assert good.ok, good.error
    assert not bad.ok and isinstance(bad.error, ScreenshotError)
    assert "step 1" in str(bad.error) and "not a readable image" in str(bad.error)
