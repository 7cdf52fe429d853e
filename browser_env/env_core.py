"""The machinery under `BrowserEnv`'s tools: one action under the watchdog, its failure
classified (the policy's mistake is a step error, a dead browser or page an episode error), the
observation taken, and the policy's copy of the screenshot with the frame its clicks are in.

Why apart from `browser_env.env`: TRL offers every public method of the environment as a tool, so
that module is the tool surface the policy sees, and this one is what no policy should see.
"""
from __future__ import annotations

import contextlib
import weakref
from typing import Any

from PIL import Image

from .browser import BrowserProcess
from .config import EnvConfig
from .episode import EpisodeRecorder
from .observe import (
    MARK_ELEMENTS_JS,
    capture,
    describe,
    first_line,
    policy_image,
    safe_title,
    safe_url,
    settle,
    stop_loading,
    watchdog,
)
from .server import default_server
from .sites.server import SiteServer
from .tasks import BrowserTask

#: every live environment, for `browser_env.close_all`
LIVE: weakref.WeakSet[EnvCore] = weakref.WeakSet()


class EnvCore:
    """State and internals of one environment (see the module doc); `BrowserEnv` adds the tools."""

    def __init__(self, config: EnvConfig | dict[str, Any] | None = None, *,
                 server: SiteServer | None = None) -> None:
        self.config = config if isinstance(config, EnvConfig) else EnvConfig.model_validate(config or {})
        self._server = server
        self._proc = BrowserProcess(self.config)
        self._context: Any = None
        self._page: Any = None
        self._rec: EpisodeRecorder | None = None
        self._btask: BrowserTask | None = None
        self._sid: str | None = None
        self._over: str | None = None
        self._crashed = False
        self._watchdog_fired = False
        self._elements: list[dict[str, Any]] = []
        self._shown: tuple[int, int] | None = None  # size of the last screenshot the policy was given
        LIVE.add(self)

    def _shutdown(self) -> None:
        """Close the context and this environment's browser."""
        self._close_context()
        self._proc.close()

    # ---- internals ----------------------------------------------------------------------------
    def _act(self, name: str, args: dict[str, Any], action: Any) -> list:
        rec = self._rec
        if rec is None:
            raise RuntimeError("call reset() first")
        if self._over:
            return self._text_only(f"The episode is over ({self._over}); no action was taken.")
        if rec.n_steps >= self.config.max_steps:
            rec.budget_exhausted()
            self._over = f"step budget of {self.config.max_steps} actions exhausted"
            return self._text_only(f"The episode is over ({self._over}).")
        rec.begin(name, args, url=safe_url(self._page))
        error = None
        with watchdog(self.config.watchdog_s, self._fire_watchdog):
            try:
                action(self._page)
                settle(self._page)
            except ValueError as exc:  # bad arguments from the policy: a step error
                error = str(exc)
            except Exception as exc:  # noqa: BLE001 - Playwright errors: timeout, missing element, dead browser
                if self._infra_dead():
                    return self._episode_error(exc)
                error = first_line(exc)
                stop_loading(self._context, self._page)
            try:
                png = self._observe()
            except Exception as exc:  # noqa: BLE001 - no observation: the page or browser is gone
                return self._episode_error(exc)
        rec.end(png, error=error)
        text = self._status_text() + (f"\nThe action failed: {error}" if error else "")
        return [{"type": "image", "image": self._for_policy(png)}, {"type": "text", "text": text}]

    def _episode_error(self, exc: BaseException) -> list:
        if self._watchdog_fired:
            msg = f"watchdog: the browser was killed after {self.config.watchdog_s:g}s without an answer"
        elif self._crashed:
            msg = f"the page crashed ({first_line(exc)})"
        elif self._proc.alive() and self._page is not None and not self._page.is_closed():
            msg = f"the page stopped responding ({first_line(exc)})"
        else:
            msg = f"the browser is gone ({first_line(exc)})"
        self._abort(msg)
        return self._text_only(f"Episode error: {msg}. The episode is over.")

    def _abort(self, message: str) -> None:
        assert self._rec is not None
        self._rec.abort(message)
        self._over = "episode error"

    def _infra_dead(self) -> bool:
        page = self._page
        return (self._crashed or self._watchdog_fired or not self._proc.alive() or page is None
                or page.is_closed())

    def _observe(self) -> bytes:
        page = self._page
        png = capture(page, self.config.action_timeout_s * 1000)
        self._elements = page.evaluate(MARK_ELEMENTS_JS, self.config.max_elements)
        return png

    def _status_text(self) -> str:
        assert self._rec is not None
        left = self.config.max_steps - self._rec.n_steps
        return describe(safe_url(self._page), safe_title(self._page), self._elements, steps_left=left)

    def _selector(self, element: int) -> str:
        if not any(e["id"] == int(element) for e in self._elements):
            raise ValueError(f"no element [{element}] on this page")
        return f'[data-uv-id="{int(element)}"]'

    def _resolve(self, url: str) -> str:
        base = (self._server or default_server()).base_url
        url = url.strip()
        if url.startswith("/"):
            return base + url
        if not url.startswith(base + "/") and url != base:
            raise ValueError(f"only the task sites under {base} can be opened")
        return url

    def _fire_watchdog(self) -> None:
        self._watchdog_fired = True
        self._proc.kill()

    def _close_context(self) -> None:
        if self._context is not None:
            with contextlib.suppress(Exception):  # the browser may be dead already
                self._context.close()
        self._context, self._page = None, None

    def _for_policy(self, png: bytes) -> Image.Image:
        image = policy_image(png, self.config.policy_max_side)
        self._shown = image.size  # the frame of the policy's next click(x, y)
        return image

    def _shown_size(self) -> tuple[int, int]:
        """The image the policy points on: the last one given, or (no image given yet, with
        `initial_screenshot=False`) the one it would have got of the current page."""
        if self._shown is None:
            assert self._rec is not None and self._rec.last_png is not None
            self._shown = policy_image(self._rec.last_png, self.config.policy_max_side).size
        return self._shown

    @staticmethod
    def _text_only(text: str) -> list:
        return [{"type": "text", "text": text}]
