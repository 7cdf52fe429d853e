"""Screenshots on disk for the site: one full image and one small thumbnail per distinct content.

Why files and not data URLs: a 50-screenshot trajectory inlined as base64 makes a page of tens of
megabytes that the browser must parse before showing anything. Pages reference small JPEG
thumbnails (lazily loaded) and link to the full image, which is only fetched when opened.
Identical screenshots (an agent waiting on the same page) share one file pair: images are keyed by
the SHA-256 of their bytes and written once per site, whichever rollout shows them.
"""

from __future__ import annotations

import hashlib
import io
import logging
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

log = logging.getLogger(__name__)

THUMB_WIDTH = 320
THUMB_QUALITY = 72
#: Formats every browser shows as they are; anything else is re-encoded as PNG.
_WEB_FORMATS = {"PNG": "png", "JPEG": "jpg", "GIF": "gif", "WEBP": "webp"}


@dataclass(frozen=True)
class StoredImage:
    """Where one screenshot's files are, relative to the site root, and its pixel size."""

    full: str
    thumb: str
    width: int
    height: int
    thumb_width: int
    thumb_height: int
    sha256: str


class ImageStore:
    """Writes full images and thumbnails under ``<site>/img``, once per content hash."""

    def __init__(self, site_root: Path, *, thumb_width: int = THUMB_WIDTH) -> None:
        self.root = Path(site_root)
        self.dir = self.root / "img"
        self.thumb_width = thumb_width
        self._by_sha: dict[str, StoredImage] = {}
        self.writes = 0  # image files actually written (tests check duplicates cost nothing)

    def add(self, data: bytes) -> StoredImage:
        """Store `data` (encoded image bytes) unless the same bytes were stored before."""
        sha = hashlib.sha256(data).hexdigest()
        if sha in self._by_sha:
            return self._by_sha[sha]
        self.dir.mkdir(parents=True, exist_ok=True)
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            ext = _WEB_FORMATS.get(img.format or "")
            name = sha[:20]
            full = self.dir / f"{name}.{ext or 'png'}"
            if ext:
                full.write_bytes(data)
            else:
                img.save(full, "PNG")
            thumb_img = img.convert("RGB")
            w, h = img.size
        if w > self.thumb_width:
            thumb_img = thumb_img.resize(
                (self.thumb_width, max(1, round(h * self.thumb_width / w))), Image.Resampling.LANCZOS
            )
        thumb = self.dir / f"{name}_t.jpg"
        thumb_img.save(thumb, "JPEG", quality=THUMB_QUALITY, optimize=True)
        self.writes += 2
        stored = StoredImage(
            full=f"img/{full.name}",
            thumb=f"img/{thumb.name}",
            width=w,
            height=h,
            thumb_width=thumb_img.width,
            thumb_height=thumb_img.height,
            sha256=sha,
        )
        self._by_sha[sha] = stored
        return stored

    def add_screenshots(self, trajectory) -> tuple[dict[int, StoredImage], list[str]]:
        """Every screenshot of a trajectory by its 1-based number; unreadable ones are reported, not fatal."""
        out: dict[int, StoredImage] = {}
        problems: list[str] = []
        for n, shot in enumerate(getattr(trajectory, "screenshots", None) or [], start=1):
            try:
                out[n] = self.add(shot.bytes())
            except Exception as exc:  # noqa: BLE001 - one broken image must not lose the page
                log.warning("screenshot %d (%s): %s", n, shot.describe(), exc)
                problems.append(f"screenshot {n}: {type(exc).__name__}: {exc}")
        return out, problems
