"""Decoding a screenshot that must be downscaled: at the smallest size that serves, under a
process-wide budget of decoded pixels.

Why: memory follows decoded pixels, not file bytes. A 6300x6300 RGBA PNG just under the pixel
guard is 170 kB on disk and 160 MB decoded; sixteen of them decoded at once by the encoder's worker
threads took offline `score` to a 1.65 GB peak. So:

- a JPEG is decoded at the smallest power-of-two reduction still at least the size sent
  (``Image.draft``: the decoder skips the rest, so the full-size pixels never exist);
- a PNG (which cannot be decoded at a reduced size) is reduced by an integer box factor before the
  final resample (``Image.reduce``; the full-size buffer is dropped at once, and the Lanczos pass
  then works on far fewer pixels);
- every full-size decode first takes its bytes from `DecodeBudget` (``CUA_DECODE_BUDGET_MB``,
  default 256 MB) and waits while others hold it, so the decoded pixels held at once stay within
  the budget; one image larger than the whole budget still decodes, alone;
- decodes run on a few threads of their own (``CUA_DECODE_THREADS``, default 2), never on the
  caller's. Why: glibc gives each thread its own malloc arena and keeps what a freed 160 MB image
  leaves there, so decodes spread over a service's 20-odd worker threads held an arena's worth
  each. Measured (`python tests/judge/pixel_memory.py DIR 16 6300`, offline `score` of sixteen
  6300x6300 RGBA screenshots): peak RSS 1,653 MB before, 1,124 MB with the budget alone, 570 MB
  with the two decoder threads.
"""
from __future__ import annotations

import io
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from PIL import Image

from ..errors import ScreenshotError
from ..settings import env_settings
from ..trajectory import Screenshot

#: Bytes per pixel of a decoded image, by mode (PIL's buffers; 4 for anything not listed).
_BYTES = {"1": 1, "L": 1, "P": 1, "LA": 2, "La": 2, "I;16": 2, "RGB": 4, "RGBA": 4, "RGBa": 4, "CMYK": 4,
          "YCbCr": 4, "I": 4, "F": 4}
#: Modes `Image.reduce` takes; others are converted first.
_REDUCIBLE = {"L", "LA", "La", "RGB", "RGBA", "RGBa", "I", "F"}


class DecodeBudget:
    """Bytes of decoded pixels held at once, process-wide (the encoder's worker threads share it)."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit = limit_bytes
        self.used = 0
        self.peak = 0  # the most held at once (for tests and logs)
        self.waits = 0  # decodes that waited for room
        self._cond = threading.Condition()

    @contextmanager
    def hold(self, nbytes: int) -> Iterator[None]:
        with self._cond:
            if self.used and self.used + nbytes > self.limit:
                self.waits += 1
                while self.used and self.used + nbytes > self.limit:
                    self._cond.wait()
            self.used += nbytes
            self.peak = max(self.peak, self.used)
        try:
            yield
        finally:
            with self._cond:
                self.used -= nbytes
                self._cond.notify_all()


_budget: DecodeBudget | None = None
_budget_lock = threading.Lock()


def decode_budget() -> DecodeBudget:
    """The process's budget, sized from ``CUA_DECODE_BUDGET_MB`` when first needed."""
    global _budget
    with _budget_lock:
        if _budget is None:
            _budget = DecodeBudget(env_settings().decode_budget_mb * 2**20)
        return _budget


_pool: tuple[int, ThreadPoolExecutor] | None = None  # (the pid it belongs to, the pool)


def decoder() -> ThreadPoolExecutor:
    """The decoder threads, made on first use and again in a forked child (whose copy of the
    parent's pool has no threads: a task sent to it would never run)."""
    global _pool
    with _budget_lock:
        if _pool is None or _pool[0] != os.getpid():
            threads = env_settings().decode_threads
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=threads, thread_name_prefix="cua-decode"))
        return _pool[1]


def decoded_bytes(img: Image.Image) -> int:
    return img.width * img.height * _BYTES.get(img.mode, 4)


def decode_scaled(shot: Screenshot, size: tuple[int, int], budget: DecodeBudget | None = None) -> Image.Image:
    """`shot` decoded and resampled to `size` (smaller than the image), holding at most one
    full-size decode's bytes of `budget` while it works. Raises `ScreenshotError`."""
    budget = budget or decode_budget()
    shot.size()  # the pixel guard (`MAX_SCREENSHOT_PIXELS`), from the header: refused before any decode
    held = shot.held_image()
    if held is not None:  # decoded already (a TRL rollout's PIL image): nothing to budget
        return held.resize(size, Image.Resampling.LANCZOS) if held.size != size else held
    return decoder().submit(_decode, shot, size, budget).result()


def _decode(shot: Screenshot, size: tuple[int, int], budget: DecodeBudget) -> Image.Image:
    try:
        img: Image.Image = Image.open(io.BytesIO(shot.bytes()))
        if img.format == "JPEG":
            img.draft("RGB", size)  # decode at 1/2, 1/4 or 1/8 where that is still >= size
        with budget.hold(decoded_bytes(img)):
            img.load()
            if img.mode not in _REDUCIBLE:
                has_alpha = "A" in img.getbands() or "transparency" in img.info
                img = img.convert("RGBA" if has_alpha else "RGB")
            factor = min(img.width // size[0], img.height // size[1])
            if factor >= 2:
                img = img.reduce(factor)  # box filter: the full-size buffer goes with the old reference
            return img.resize(size, Image.Resampling.LANCZOS) if img.size != size else img
    except ScreenshotError:
        raise
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise ScreenshotError(f"cannot decode screenshot: {exc}", file=shot.path) from exc
