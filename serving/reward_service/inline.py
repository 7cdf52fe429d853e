"""Inline screenshots decoded once: by the body parser, whose validation decodes them anyway.

Why: the body parser (`body.lift_data_urls`) must decode each data URL's payload to know that its
text is plain base64. Before, those bytes were thrown away and `Screenshot.bytes` decoded the same
text again to hash, size and verify it (a second decode plus a copy of the payload text: ~10% of
the service's CPU at M = 50). `DecodedImages` takes the parser's bytes as they come, establishes
the screenshot facts (hash, format, header size) and the verification verdict (cached by hash,
`image_verdict`) while they are hot in cache, then lets them go; `apply` hands the facts to the
parsed trajectory's screenshots whose data URL is that very string.

Only facts are kept, never the decoded bytes, so a request holds no more memory than its text
while it waits for a parse thread. A text whose bytes are no readable image, or over the size
guard, gets no facts: the ordinary check then fails on it with its place named, as before.
"""
from __future__ import annotations

from collections.abc import Iterable

from verifier.errors import ScreenshotError
from verifier.judge.images import image_verdict
from verifier.trajectory import MAX_SCREENSHOT_BYTES, KnownImage, Screenshot


class DecodedImages:
    """`on_image` for `body.read_model`, then `apply` to the request's screenshots. Identity,
    not equality, links a text to its facts: the parsed trajectory holds the parser's own string
    objects (`Screenshot.data_url` keeps a string as given), and looking a megabyte of text up by
    value would hash it."""

    def __init__(self) -> None:
        self._facts: dict[int, tuple[str, KnownImage]] = {}

    def __len__(self) -> int:
        return len(self._facts)

    def __call__(self, text: str, decoded: bytes) -> None:
        if len(decoded) > MAX_SCREENSHOT_BYTES:
            return
        probe = Screenshot.from_bytes(decoded, step=0)  # no copy: bytes(b) is b
        try:
            facts = probe.known()
        except ScreenshotError:
            return
        image_verdict(facts.sha256, lambda: decoded)
        self._facts[id(text)] = (text, facts)  # the text is held, so its id is not reused

    def apply(self, shots: Iterable[Screenshot]) -> int:
        """Give each screenshot carrying one of the parsed texts its facts; how many got them."""
        given = 0
        for shot in shots:
            hit = self._facts.get(id(shot.data_url)) if shot.data_url is not None else None
            if hit is not None and hit[0] is shot.data_url:
                shot.know(hit[1])
                given += 1
        return given
