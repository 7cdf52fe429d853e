"""Screenshots -> downscaled data URLs, encoded once per content hash.

A GRPO group of G rollouts of one task shares most pages, and the pipeline shows the same
screenshot to several stages, so re-encoding per request would dominate client CPU. The encoder
keeps an LRU of finished data URLs keyed by the screenshot's sha256 (its encoded bytes), under a
thread lock because TRL calls reward functions from its own event-loop thread.

Downscaling keeps the aspect ratio and applies both limits (longest side, total pixels): a
1920x1080 page with ``max_side=1280`` becomes 1280x720. Images already within the limits and
already in the target format are sent as their original bytes.

Example::

    enc = ImageEncoder(max_side=1280, max_pixels=None)
    url = enc.encode(screenshot).data_url   # "data:image/png;base64,..."
"""
from __future__ import annotations

import base64
import io
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

from PIL import Image

from ..trajectory import Screenshot

_MIME = {"png": "image/png", "jpeg": "image/jpeg"}
_PIL_FORMAT = {"png": "PNG", "jpeg": "JPEG"}


@dataclass(frozen=True)
class EncodedImage:
    """A data URL ready to send, with what it shows (for tests and logs)."""

    sha256: str  # hash of the *source* bytes: the cache / de-duplication key
    data_url: str
    width: int
    height: int


def target_size(width: int, height: int, max_side: int | None, max_pixels: int | None) -> tuple[int, int]:
    """The largest size with the same aspect ratio within both limits (never upscales)."""
    scale = 1.0
    if max_side is not None and max(width, height) > max_side:
        scale = min(scale, max_side / max(width, height))
    if max_pixels is not None and width * height > max_pixels:
        scale = min(scale, math.sqrt(max_pixels / (width * height)))
    if scale >= 1.0:
        return width, height
    w, h = max(1, math.floor(width * scale)), max(1, math.floor(height * scale))
    # floor keeps us inside both limits despite float rounding
    return w, h


class ImageEncoder:
    """Thread-safe LRU of encoded screenshots; counts real encodes in `encodes`."""

    def __init__(self, *, max_side: int | None = 1280, max_pixels: int | None = None,
                 fmt: Literal["png", "jpeg"] = "png", jpeg_quality: int = 85,
                 cache_size: int = 512) -> None:
        self.max_side, self.max_pixels = max_side, max_pixels
        self.fmt, self.jpeg_quality, self.cache_size = fmt, jpeg_quality, cache_size
        self.encodes = 0
        self._cache: OrderedDict[str, EncodedImage] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict[str, threading.Lock] = {}

    @property
    def settings_key(self) -> str:
        """What the judge sees depends on these; part of the response-cache key."""
        return f"{self.fmt}:{self.max_side}:{self.max_pixels}:{self.jpeg_quality}"

    def cached(self, sha256: str) -> EncodedImage | None:
        with self._lock:
            hit = self._cache.get(sha256)
            if hit is not None:
                self._cache.move_to_end(sha256)
            return hit

    def encode(self, shot: Screenshot) -> EncodedImage:
        """The data URL for `shot` (cached). Raises `ScreenshotError` on unreadable images."""
        key = shot.sha256
        hit = self.cached(key)
        if hit is not None:
            return hit
        # single flight: concurrent calls fanning out over one screenshot encode it once
        with self._lock:
            key_lock = self._pending.setdefault(key, threading.Lock())
        with key_lock:
            hit = self.cached(key)
            if hit is not None:
                return hit
            try:
                encoded = self._encode(shot, key)
            except BaseException:
                with self._lock:
                    self._pending.pop(key, None)
                raise
            with self._lock:  # publish before un-registering, so no latecomer encodes again
                self.encodes += 1
                if self.cache_size > 0:
                    self._cache[key] = encoded
                    self._cache.move_to_end(key)
                    while len(self._cache) > self.cache_size:
                        self._cache.popitem(last=False)
                self._pending.pop(key, None)
        return encoded

    def _encode(self, shot: Screenshot, key: str) -> EncodedImage:
        img = shot.image()
        w, h = target_size(img.width, img.height, self.max_side, self.max_pixels)
        source_format = (img.format or "").upper()
        if (w, h) == img.size and source_format == _PIL_FORMAT[self.fmt]:
            data = shot.bytes()
        else:
            out = img.resize((w, h), Image.Resampling.LANCZOS) if (w, h) != img.size else img
            data = self._to_bytes(out)
        url = f"data:{_MIME[self.fmt]};base64,{base64.b64encode(data).decode('ascii')}"
        return EncodedImage(sha256=key, data_url=url, width=w, height=h)

    def _to_bytes(self, img: Image.Image) -> bytes:
        buf = io.BytesIO()
        if self.fmt == "jpeg":
            if img.mode != "RGB":
                img = img.convert("RGB")
            img.save(buf, format="JPEG", quality=self.jpeg_quality, optimize=True)
        else:
            if img.mode not in ("RGB", "RGBA", "L", "LA", "P"):
                img = img.convert("RGBA" if "A" in img.getbands() else "RGB")
            img.save(buf, format="PNG", optimize=False)
        return buf.getvalue()
