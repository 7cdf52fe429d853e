"""Screenshots -> image references for the judge, with no image work that is not needed.

Encoding dominates the client's CPU (a 1440x900 PNG costs ~0.1 s to decode, ~0.25 s to resize and
~0.3 s to re-encode on a small CPU), so:

- a screenshot already within the limits (longest side, total pixels) and in a format every
  server reads (PNG, JPEG, WebP) is sent as its **original bytes**: its size is read from the
  header, and its bytes are verified once (`verify_image_bytes`: every PNG chunk's checksum through
  to the end marker, other formats decoded), so a truncated or corrupted file is refused here, with
  its reason, instead of reaching the judge;
- only a screenshot over the limits is decoded, downscaled (aspect ratio kept) and re-encoded,
  as PNG (fast zlib level) or JPEG (``fmt``);
- each result is kept in an LRU keyed by the source's sha256, so a screenshot shown to several
  stages, or to every rollout of a GRPO group, is prepared once per process (single flight under
  a thread lock: TRL calls reward functions from its own event-loop thread);
- the caller runs `encode` in a worker thread (the judge renders in ``asyncio.to_thread``), unless
  every image of the call is `ready` (already prepared): a thread hop then costs more than the
  dictionary lookups it would run.

Transport: a ``data:`` URL (base64) by default; with ``media_dir`` the bytes are written once to a
content-addressed file there and sent as a ``file://`` URL, for a vLLM server on the same host
started with ``--allowed-local-media-path`` covering that directory (no base64, much smaller
requests). vLLM's per-item ``uuid`` is `EncodedImage.sha256`, the hash of the bytes actually sent,
so two clients with different image settings never share a server-side cache entry.

Example::

    enc = ImageEncoder(max_side=1280, max_pixels=None)
    url = enc.encode(screenshot).url   # "data:image/png;base64,..." (or "file:///...")
"""
from __future__ import annotations

import base64
import hashlib
import io
import logging
import math
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from PIL import Image

from ..errors import ScreenshotError
from ..trajectory import Screenshot
from .jsonbody import JsonSafe
from .pixels import decode_scaled
from .pngcheck import crc32, png_chunks_sound, png_pixels_problem

__all__ = ["EncodedImage", "ImageEncoder", "crc32", "png_chunks_sound", "verify_image_bytes"]

log = logging.getLogger("cua_verifier.judge")
_MIME = {"png": "image/png", "jpeg": "image/jpeg"}
_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp"}
#: Formats sent as they are when within the limits (every vLLM image loader reads them).
PASS_THROUGH = frozenset(_EXT)
#: zlib level of re-encoded PNGs: level 1 is about twice as fast as the default 6 and, on
#: screenshots, within a few percent of its size.
PNG_COMPRESS_LEVEL = 1


#: How many verdicts of `verify_image_bytes` are kept (by content hash; a verdict is a few bytes).
VERIFIED_CACHE_SIZE = 8192
_verified: OrderedDict[str, str | None] = OrderedDict()
_verified_lock = threading.Lock()


def verify_image_bytes(data: bytes, sha256: str | None = None) -> str | None:
    """Why `data` is not a whole, readable image (a reason for the unscored record), or None.

    PNG (nearly every screenshot): PIL's ``verify`` walks every chunk to the end marker and checks
    each one's CRC, so a truncated file or a flipped bit is found without decoding the pixels (a
    fraction of a decode's cost). Other formats are decoded. Verdicts are kept by content hash
    (`sha256` when the caller knows it), so a screenshot shown to many stages, or to every rollout
    of a group, is verified once per process.
    """
    return image_verdict(sha256 or hashlib.sha256(data).hexdigest(), lambda: data)


def image_verdict(sha256: str, load: Callable[[], bytes]) -> str | None:
    """`verify_image_bytes` by hash: `load()` (e.g. decoding a data URL) runs only when this content
    has no verdict yet, so a screenshot passed through as its own base64 text is decoded once to be
    verified (the service does it while it still holds the decoded bytes) and never again."""
    with _verified_lock:
        if sha256 in _verified:
            _verified.move_to_end(sha256)
            return _verified[sha256]
    reason = _check(load())
    with _verified_lock:
        _verified[sha256] = reason
        while len(_verified) > VERIFIED_CACHE_SIZE:
            _verified.popitem(last=False)
    return reason


def _check(data: bytes) -> str | None:
    """PNG: the CRC walk (else PIL's own, which words the reason), then the pixel stream inflated
    (`pngcheck`: CRCs recomputed over damaged pixels pass any chunk walk). Other formats: decoded."""
    try:
        with Image.open(io.BytesIO(data)) as img:
            if img.format != "PNG":
                img.load()
                return None
            if not (img.tile and png_chunks_sound(data, img.tile[0][2] - 8)):
                img.verify()  # PIL's own walk decides, and words the reason
    except Exception as exc:  # noqa: BLE001 - PIL raises OSError, SyntaxError, struct.error, ...
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return png_pixels_problem(data)


@dataclass(frozen=True)
class EncodedImage:
    """An image reference ready to send, with what it shows (for tests and logs)."""

    sha256: str  # hash of the bytes sent: vLLM's per-item uuid
    source_sha256: str  # hash of the screenshot's own bytes: the cache key
    url: str  # data: URL, or file:// URL with a media directory
    width: int
    height: int
    nbytes: int  # size of the image bytes sent (before base64)
    passed_through: bool  # the original bytes, not re-encoded

    @property
    def data_url(self) -> str:  # the name before file URLs existed
        return self.url


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


def prepare_ahead(screenshots: Iterable[Screenshot], prepare: Callable[[Screenshot], object], limit: int) -> int:
    """Run `prepare` once per distinct screenshot, at most `limit` of them (a cache's size: what is
    prepared ahead must not evict what was prepared before it); returns how many were prepared.

    For a judge's ``prepare_images`` (called in a worker thread while the rubric call, which shows no
    image, waits on the judge). A screenshot that fails is skipped: the call that sends it reports
    the error with its stage."""
    seen: set[str] = set()
    done = 0
    for shot in screenshots:
        if done >= limit:
            break
        try:
            key = shot.sha256
            if key in seen:
                continue
            seen.add(key)
            prepare(shot)
            done += 1
        except Exception as exc:  # noqa: BLE001 - reported by the call that sends it
            log.debug("screenshot of step %s not prepared ahead: %s", shot.step, exc)
    return done


def base64_size(url: str) -> int:
    """Bytes encoded by a data URL's (validated) base64 payload."""
    payload = len(url) - url.index(",") - 1
    return payload * 3 // 4 - (url.endswith("==") + url.endswith("="))


def passed_data_url(shot: Screenshot, mime: str) -> JsonSafe | None:
    """The screenshot's own data URL, marked JSON-safe, when it can go to the judge as it came.

    Only a ``data:<sniffed mime>;base64,`` URL whose payload `Screenshot.bytes` already decoded
    with ``validate=True`` qualifies: its text is then the base64 alphabet only, safe to splice
    into a request body unescaped. The marked copy replaces the screenshot's own string, so the
    text is held once (the copy is a memcpy, far cheaper than base64-encoding the bytes again).
    """
    url = shot.data_url
    if url is None or not url.startswith(f"data:{mime};base64,") or shot.known_sha256 is None:
        return None
    if type(url) is JsonSafe:
        return url
    safe = JsonSafe(url)
    shot.data_url = safe
    return safe


class ImageEncoder:
    """Thread-safe LRU of prepared screenshots; `encodes` counts real decode+re-encode work,
    `prepared` every screenshot prepared (pass-through included)."""

    def __init__(self, *, max_side: int | None = 1280, max_pixels: int | None = None,
                 fmt: Literal["png", "jpeg"] = "png", jpeg_quality: int = 85,
                 cache_size: int = 512, cache_bytes: int = 256 * 2**20,
                 media_dir: str | Path | None = None) -> None:
        self.max_side, self.max_pixels = max_side, max_pixels
        self.fmt, self.jpeg_quality, self.cache_size = fmt, jpeg_quality, cache_size
        self.cache_bytes = cache_bytes  # bound on the URLs held (data URLs are the image's size x 4/3)
        self.cached_bytes = 0
        self.media_dir = Path(media_dir).resolve() if media_dir else None
        if self.media_dir is not None:
            self.media_dir.mkdir(parents=True, exist_ok=True)
        self.encodes = 0
        self.prepared = 0
        self._cache: OrderedDict[str, EncodedImage] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict[str, threading.Lock] = {}

    @property
    def settings_key(self) -> str:
        """What the judge sees depends on these; part of the response-cache key."""
        return f"v2:{self.fmt}:{self.max_side}:{self.max_pixels}:{self.jpeg_quality}"

    def cached(self, sha256: str) -> EncodedImage | None:
        with self._lock:
            hit = self._cache.get(sha256)
            if hit is not None:
                self._cache.move_to_end(sha256)
            return hit

    def ready(self, shot: Screenshot) -> bool:
        """True when `encode(shot)` is a cache lookup: no read, no hash, no image work left."""
        sha = shot.known_sha256
        return sha is not None and self.cached(sha) is not None

    def encode(self, shot: Screenshot) -> EncodedImage:
        """The reference for `shot` (cached). Raises `ScreenshotError` on unreadable images."""
        key = shot.sha256
        hit = self.cached(key)
        if hit is not None:
            return hit
        # single flight: concurrent calls fanning out over one screenshot prepare it once
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
                self.prepared += 1
                self.encodes += not encoded.passed_through
                if self.cache_size > 0 and len(encoded.url) <= self.cache_bytes:
                    self._cache[key] = encoded
                    self._cache.move_to_end(key)
                    self.cached_bytes += len(encoded.url)
                    while len(self._cache) > self.cache_size or self.cached_bytes > self.cache_bytes:
                        _, gone = self._cache.popitem(last=False)
                        self.cached_bytes -= len(gone.url)
                self._pending.pop(key, None)
        return encoded

    def within_limits(self, shot: Screenshot) -> bool:
        """True when `shot` can be sent as its own bytes (header read only, no pixel decode)."""
        w, h = shot.size()
        return target_size(w, h, self.max_side, self.max_pixels) == (w, h) and shot.mime() in PASS_THROUGH

    def _encode(self, shot: Screenshot, key: str) -> EncodedImage:
        if self.within_limits(shot):
            mime = shot.mime() or "image/png"
            (w, h), passed = shot.size(), True
            reason = image_verdict(key, shot.bytes)  # once per distinct image (by hash): no decode after
            if reason is not None:
                raise ScreenshotError(f"screenshot of step {shot.step} ({shot.describe()}) is not a readable "
                                      f"image: {reason}")
            url = passed_data_url(shot, mime) if self.media_dir is None else None
            if url is not None:  # the client's own base64 text, byte for byte: no decode, no encode
                return EncodedImage(sha256=key, source_sha256=key, url=url, width=w, height=h,
                                    nbytes=base64_size(url), passed_through=True)
            data = shot.bytes()
        else:
            w, h = target_size(*shot.size(), self.max_side, self.max_pixels)
            out = decode_scaled(shot, (w, h))  # at the size sent, under the decode budget (`pixels`)
            data, mime, passed = self._to_bytes(out), _MIME[self.fmt], False
        digest = hashlib.sha256(data).hexdigest() if not passed else key
        return EncodedImage(sha256=digest, source_sha256=key, url=self._url(data, mime, digest),
                            width=w, height=h, nbytes=len(data), passed_through=passed)

    def _url(self, data: bytes, mime: str, digest: str) -> str:
        if self.media_dir is None:
            # JSON-safe by construction: the body serialiser copies it instead of escaping it
            return JsonSafe(f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}")
        path = self.media_dir / f"{digest}.{_EXT[mime]}"
        if not path.is_file():  # content-addressed: an existing file already holds these bytes
            fd, tmp = tempfile.mkstemp(dir=self.media_dir, suffix=".part")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)  # atomic: a server never reads a half-written file
        return path.as_uri()

    def _to_bytes(self, img: Image.Image) -> bytes:
        buf = io.BytesIO()
        if self.fmt == "jpeg":
            if img.mode != "RGB":
                img = img.convert("RGB")
            img.save(buf, format="JPEG", quality=self.jpeg_quality)
        else:
            if img.mode not in ("RGB", "RGBA", "L", "LA", "P"):
                img = img.convert("RGBA" if "A" in img.getbands() else "RGB")
            img.save(buf, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
        return buf.getvalue()
