"""Downscaling math and the once-per-content-hash encoder."""
from __future__ import annotations

import base64
import io

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
    assert enc.encodes == 3


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
