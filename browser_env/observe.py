"""Page-level helpers: the text half of an observation (URL, title, numbered interactive
elements), the policy's copy of the screenshot, waiting for and stopping loads, and the watchdog timer.

Elements are numbered in the page itself (a `data-uv-id` attribute set by `MARK_ELEMENTS_JS`), so
`click(element=n)` addresses exactly the element the policy was shown.
"""
from __future__ import annotations

import contextlib
import io
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from PIL import Image

MARK_ELEMENTS_JS = """(limit) => {
  const sel = 'a[href],button,input:not([type=hidden]),select,textarea,[role=button]';
  document.querySelectorAll('[data-uv-id]').forEach(e => e.removeAttribute('data-uv-id'));
  const out = [];
  for (const el of document.querySelectorAll(sel)) {
    const r = el.getBoundingClientRect();
    const st = getComputedStyle(el);
    if (r.width === 0 || r.height === 0 || st.visibility === 'hidden' || st.display === 'none') continue;
    if (out.length >= limit) break;
    const id = out.length + 1;
    el.setAttribute('data-uv-id', String(id));
    const label = (el.getAttribute('aria-label') || el.innerText || el.value || el.placeholder
                   || el.name || '').trim().replace(/\\s+/g, ' ').slice(0, 50);
    out.push({id, tag: el.tagName.toLowerCase(), type: el.type || '', label,
              x: Math.round(r.x + r.width / 2), y: Math.round(r.y + r.height / 2)});
  }
  return out;
}"""

KIND = {"a": "link", "button": "button", "select": "select", "textarea": "textbox"}


def describe(url: str | None, title: str, elements: list[dict[str, Any]], *, steps_left: int) -> str:
    """A short observation: where the browser is and what can be clicked or typed into."""
    items = []
    for e in elements:
        kind = KIND.get(e["tag"]) or ("button" if e["type"] in ("submit", "button") else "input")
        items.append(f'[{e["id"]}] {kind} "{e["label"]}"')
    return (f"URL: {url or '?'}\nTitle: {title}\nElements: " + (" ".join(items) or "none")
            + f"\nActions left: {steps_left}")


def settle(page: Any) -> None:
    page.wait_for_timeout(50)  # let a click start its navigation before waiting for it
    page.wait_for_load_state("load")


def stop_loading(context: Any, page: Any) -> None:
    """Stop a navigation still pending (the browser's Stop button): the old page stays, and the
    next screenshot no longer waits for the slow one."""
    with contextlib.suppress(Exception):
        context.new_cdp_session(page).send("Page.stopLoading")


def safe_url(page: Any) -> str | None:
    try:
        return page.url if page is not None else None
    except Exception:  # noqa: BLE001 - dead page
        return None


def safe_title(page: Any) -> str:
    try:
        return page.title()
    except Exception:  # noqa: BLE001 - dead page
        return ""


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


@contextlib.contextmanager
def watchdog(seconds: float, on_fire: Callable[[], None]) -> Iterator[None]:
    """Call `on_fire` (from a timer thread) if the block is still running after `seconds`."""
    timer = threading.Timer(seconds, on_fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def policy_image(png: bytes, max_side: int | None) -> Image.Image:
    """The screenshot the policy sees: full size, or a thumbnail whose longer side is `max_side`
    (aspect kept). Only the policy's copy shrinks: image tokens grow with the area, and the
    recording, which the judge reads, keeps the full-size PNG."""
    image = Image.open(io.BytesIO(png))
    if max_side is not None and max(image.size) > max_side:
        image.thumbnail((max_side, max_side))
    return image


#: Chromium's answer when its compositor has no frame to give yet (the page is mid-navigation, or
#: the machine is busy): nothing is wrong with the page, and the next try a moment later succeeds.
FRAME_NOT_READY = "Unable to capture screenshot"
#: Tries of a capture that fails that way before the failure counts (the page then stopped responding).
CAPTURE_TRIES = 3
CAPTURE_PAUSE_S = 0.25


def capture(page: Any, timeout_ms: float, *, tries: int = CAPTURE_TRIES, pause_s: float = CAPTURE_PAUSE_S) -> bytes:
    """The page as PNG bytes. Why retried: under load Chromium sometimes answers a capture with
    "Unable to capture screenshot" for a page that is fine, and ending the episode on it cost a
    training step a rollout (and CI a run). Any other failure, or the last try's, is raised."""
    for attempt in range(1, tries + 1):
        try:
            return page.screenshot(type="png", timeout=timeout_ms)
        except Exception as exc:  # Playwright's Error: only its message tells the kind
            if attempt == tries or FRAME_NOT_READY not in str(exc) or page.is_closed():
                raise
        time.sleep(pause_s)
    raise AssertionError("unreachable")  # pragma: no cover
