"""Decoding to downscale follows decoded pixels, not file bytes (issue 38 §3): a process-wide
budget of decoded pixels, decodes at the size sent where the format allows, and decoder threads
of their own (so freed images do not stay behind in every worker thread's malloc arena)."""
from __future__ import annotations

import io
import json
import multiprocessing
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from PIL import Image, ImageChops, ImageDraw, ImageStat

from verifier.judge import pixels
from verifier.judge.images import ImageEncoder
from verifier.trajectory import Screenshot


def page(size: tuple[int, int], mode: str = "RGBA", fmt: str = "PNG", seed: int = 0) -> bytes:
    img = Image.new(mode, size, "white")
    d = ImageDraw.Draw(img)
    for i in range(12):
        x, y = (seed * 37 + i * 211) % (size[0] - 200), (i * 97) % (size[1] - 60)
        d.rectangle([x, y, x + 180, y + 40], fill=(30 * i % 255, 90, 200))
        d.text((x + 10, y + 10), f"item {i}", fill="black")
    buf = io.BytesIO()
    img.save(buf, format=fmt, **({"quality": 90} if fmt == "JPEG" else {"compress_level": 1}))
    return buf.getvalue()


class Recording(pixels.DecodeBudget):
    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.asked: list[int] = []

    def hold(self, nbytes: int):
        self.asked.append(nbytes)
        return super().hold(nbytes)


def test_concurrent_decodes_hold_no_more_pixels_than_the_budget(monkeypatch):
    monkeypatch.setattr(pixels, "_pool", None)
    monkeypatch.setenv("CUA_DECODE_THREADS", "4")  # more decoders than the budget lets run at once
    one = 3000 * 2000 * 4
    budget = Recording(one + one // 2)  # room for one decode, not two
    shots = [Screenshot.from_bytes(page((3000, 2000), seed=i), step=i) for i in range(6)]
    errors: list[BaseException] = []

    def work(shot: Screenshot) -> None:
        try:
            assert pixels.decode_scaled(shot, (1200, 800), budget).size == (1200, 800)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in shots]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and budget.asked == [one] * 6
    assert budget.peak == one and budget.waits >= 1 and budget.used == 0


def test_a_single_image_over_the_whole_budget_still_decodes():
    budget = pixels.DecodeBudget(1024)
    shot = Screenshot.from_bytes(page((800, 600)), step=1)
    assert pixels.decode_scaled(shot, (400, 300), budget).size == (400, 300) and budget.peak == 800 * 600 * 4


def test_a_jpeg_is_decoded_at_a_reduced_size_and_a_png_is_box_reduced_first():
    budget = Recording(2**30)
    jpeg = Screenshot.from_bytes(page((4000, 3000), "RGB", "JPEG"), step=1)
    out = pixels.decode_scaled(jpeg, (1000, 750), budget)
    assert out.size == (1000, 750) and budget.asked == [1000 * 750 * 4]  # draft: 1/4 scale, never full size
    png = Screenshot.from_bytes(page((4000, 3000)), step=2)
    seen: list[tuple[int, int]] = []
    real = Image.Image.resize

    def spy(self, size, *a, **kw):
        seen.append(self.size)
        return real(self, size, *a, **kw)

    Image.Image.resize = spy  # type: ignore[method-assign]
    try:
        assert pixels.decode_scaled(png, (1000, 750), budget).size == (1000, 750)
    finally:
        Image.Image.resize = real  # type: ignore[method-assign]
    assert seen == [(1000, 750)] or seen == []  # reduced by 4 first: the Lanczos pass saw no 12 MP image


@pytest.mark.parametrize("mode,fmt", [("RGB", "PNG"), ("RGBA", "PNG"), ("RGB", "JPEG"), ("P", "PNG"), ("L", "PNG")])
def test_what_is_sent_looks_like_the_full_size_resample(mode, fmt):
    data = page((2400, 1500), "RGB" if mode in ("P", "L") else mode, fmt)
    if mode in ("P", "L"):
        buf = io.BytesIO()
        img = Image.open(io.BytesIO(data))
        (img.quantize(16) if mode == "P" else img.convert("L")).save(buf, format="PNG")
        data = buf.getvalue()
    ours = pixels.decode_scaled(Screenshot.from_bytes(data, step=1), (960, 600), pixels.DecodeBudget(2**30))
    full = Image.open(io.BytesIO(data)).convert(ours.mode).resize((960, 600), Image.Resampling.LANCZOS)
    diff = ImageStat.Stat(ImageChops.difference(ours.convert("RGB"), full.convert("RGB"))).mean
    assert ours.size == (960, 600) and max(diff) < 4.0, diff


def test_the_encoder_downscales_through_the_budget(monkeypatch):
    budget = Recording(2**30)
    monkeypatch.setattr(pixels, "_budget", budget)
    enc = ImageEncoder(max_side=None, max_pixels=1_310_720)
    got = enc.encode(Screenshot.from_bytes(page((1920, 1080), "RGB"), step=1))
    assert (got.width, got.height) == (1526, 858) and not got.passed_through and budget.asked == [1920 * 1080 * 4]


def _in_child(queue) -> None:
    shot = Screenshot.from_bytes(page((900, 600)), step=1)
    queue.put(pixels.decode_scaled(shot, (450, 300)).size)


def test_a_forked_child_gets_decoder_threads_of_its_own():
    pixels.decode_scaled(Screenshot.from_bytes(page((900, 600)), step=1), (450, 300))  # the parent's pool exists
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_in_child, args=(queue,))
    child.start()
    child.join(30)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive and queue.get(timeout=1) == (450, 300)


BENCH = Path(__file__).with_name("pixel_memory.py")


@pytest.mark.slow
def test_offline_score_of_near_limit_screenshots_stays_within_the_decode_budget(tmp_path):
    """8 screenshots of 4500x4500 RGBA (81 MB each decoded, ~100 kB as PNG) scored offline. Bound:
    the peak grows less than 450 MB (the 256 MB budget plus what the two decoder threads' arenas
    keep); before, every worker thread kept its own image's worth: +856 MB for these eight, +364 MB after."""
    started = time.time()
    done = subprocess.run([sys.executable, str(BENCH), str(tmp_path / "run"), "8", "4500"], check=False,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["exit"] == 0 and got["peak_mb"] - got["base_mb"] < 450, (got, time.time() - started)
