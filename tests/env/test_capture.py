"""A capture Chromium answers with "Unable to capture screenshot" is tried again; nothing else is."""
from __future__ import annotations

import pytest

from browser_env.observe import FRAME_NOT_READY, capture


class Page:
    """Stands in for a Playwright page: `screenshot` raises each of `errors` in turn, then answers."""

    def __init__(self, *errors: Exception, closed: bool = False) -> None:
        self.errors, self.calls, self.closed = list(errors), 0, closed

    def screenshot(self, *, type: str, timeout: float) -> bytes:
        assert type == "png" and timeout == 5000
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return b"\x89PNG"

    def is_closed(self) -> bool:
        return self.closed


def not_ready() -> Exception:
    return RuntimeError(f"Page.screenshot: Protocol error (Page.captureScreenshot): {FRAME_NOT_READY}")


def test_a_frame_not_ready_is_tried_again_until_it_comes():
    page = Page(not_ready(), not_ready())
    assert capture(page, 5000, pause_s=0) == b"\x89PNG" and page.calls == 3


def test_it_counts_after_the_last_try():
    page = Page(not_ready(), not_ready(), not_ready())
    with pytest.raises(RuntimeError, match=FRAME_NOT_READY):
        capture(page, 5000, pause_s=0)
    assert page.calls == 3


@pytest.mark.parametrize("page", [Page(TimeoutError("Timeout 5000ms exceeded")),
                                  Page(not_ready(), closed=True)])
def test_any_other_failure_or_a_closed_page_is_raised_at_once(page):
    with pytest.raises(Exception):  # noqa: B017 - whichever the page raised
        capture(page, 5000, pause_s=0)
    assert page.calls == 1
