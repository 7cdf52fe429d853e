"""`BrowserEnv`: a real Chromium on the project's task sites, as a TRL `environment_factory`.

TRL (>= 1.16) builds one instance per rollout (pooled, reset per episode), calls
`reset(**dataset_row)` and offers every public method as a tool; a tool that returns a list of
content parts keeps them, anything else is turned into a string. So every action tool returns
`[{"type": "image", "image": <PIL screenshot>}, {"type": "text", "text": <short observation>}]`.
The episode is recorded as it happens (`episode.EpisodeRecorder`); the `trajectory` property is
what `verifier.loaders.rollouts` reads when TRL hands the rewards `environments=[...]`.

Bounds: `max_steps` actions per episode, a Playwright timeout on every call, a page-load timeout
on navigations and a watchdog that kills this environment's own browser when a call outlives
`watchdog_s`: a dead browser fails the pending call, so a training step never hangs. A killed or
crashed browser (or page) is an episode error: recorded, the episode ends, the next `reset`
launches a new browser. By default the rewards get `None` for such an episode (the `trajectory`
property raises `TrajectoryError`: the failure was the machine's, not the policy's); set
`EnvConfig(score_episode_errors=True)` to have the verifier judge it anyway.
"""
from __future__ import annotations

from typing import Any

from verifier.errors import TrajectoryError
from verifier.trajectory import Trajectory

from .browser import BrowserProcess, stop_driver
from .env_core import LIVE, EnvCore
from .episode import EpisodeRecorder
from .observe import first_line, safe_url, watchdog
from .pointer import screen_frame
from .server import default_server
from .sites.server import COOKIE
from .tasks import BrowserTask, get_task


class BrowserEnv(EnvCore):
    """One browser episode at a time on the loopback task sites. Tools: goto, click, type, scroll,
    go_back, answer."""

    # ---- TRL contract -------------------------------------------------------------------------
    def reset(self, task_id: str | None = None, **row: Any) -> str | list:
        """Start a fresh episode of `task_id` (a `browser_env.tasks.TASKS` key): new browser context,
        new site session, the start page opened. Returns the first observation: the start page's
        screenshot and text as content parts (TRL 1.16 appends a list to the last user message and
        passes its image to the policy), or the text alone with `initial_screenshot=False`."""
        if not task_id:
            raise ValueError("BrowserEnv.reset needs a task_id column (see browser_env.tasks.TASKS)")
        self._btask = get_task(str(task_id))
        server = self._server or default_server()
        self._close_context()
        if self._sid is not None:
            server.drop_session(self._sid)
        self._sid = server.new_session()
        self._rec = EpisodeRecorder(self._btask.to_task(server.base_url))
        self._over, self._crashed, self._watchdog_fired, self._elements = None, False, False, []
        self._shown = None
        browser = self._proc.ensure()
        cfg = self.config
        self._context = browser.new_context(viewport={"width": cfg.viewport_width, "height": cfg.viewport_height})
        self._context.add_cookies([{"name": COOKIE, "value": self._sid, "url": server.base_url}])
        self._page = self._context.new_page()
        self._page.set_default_timeout(cfg.action_timeout_s * 1000)
        self._page.set_default_navigation_timeout(cfg.page_load_timeout_s * 1000)
        self._page.on("crash", lambda _page: setattr(self, "_crashed", True))
        error = None
        with watchdog(self.config.watchdog_s, self._fire_watchdog):
            try:
                self._page.goto(self._btask.start_url(server.base_url))
            except Exception as exc:  # noqa: BLE001 - classified below
                error = first_line(exc)
            try:
                png = self._observe()
            except Exception as exc:  # noqa: BLE001
                self._abort(f"cannot observe the start page: {first_line(exc)}")
                return f"Task: {self._btask.instruction}\nEpisode error: {self._rec.error}"
        self._rec.initial(png)
        note = f"\nThe start page failed to load: {error}" if error else ""
        text = f"{self._status_text()}{note}"
        if not cfg.initial_screenshot:
            return text
        return [{"type": "image", "image": self._for_policy(png)}, {"type": "text", "text": text}]

    # ---- tools (public methods: TRL offers each one to the policy) ----------------------------
    def goto(self, url: str) -> list:
        """Open a URL in the browser (a full URL or a path such as /shop/).

        Args:
            url: the address to open.
        """
        def act(page: Any) -> None:
            page.goto(self._resolve(url))
        return self._act("goto", {"url": url}, act)

    def click(self, element: int | None = None, x: int | None = None, y: int | None = None) -> list:
        """Click an element by its number from the observation, or a point of the last screenshot you were shown.

        Args:
            element: the element number shown as [n] in the observation.
            x: horizontal pixel of the screenshot image as you were shown it, 0 at its left edge (with y,
                instead of element).
            y: vertical pixel of the screenshot image as you were shown it, 0 at its top edge (with x,
                instead of element).
        """
        def act(page: Any) -> None:
            if element is not None:
                page.click(self._selector(element))
            elif x is not None and y is not None:  # the policy's pixels scaled to the viewport's (browser_env.pointer)
                frame = screen_frame(x, y, self._shown_size(), (self.config.viewport_width, self.config.viewport_height))
                if frame.agent_size != frame.screen_size:
                    self._rec.locate(frame)  # type: ignore[union-attr]  # _act checked it
                page.mouse.click(float(frame.arguments["x"]), float(frame.arguments["y"]))
            else:
                raise ValueError("click needs an element number or both x and y")
        return self._act("click", {k: v for k, v in (("element", element), ("x", x), ("y", y)) if v is not None},
                         act)

    def type(self, text: str, element: int | None = None, submit: bool = False) -> list:
        """Type text into an input field, replacing its content.

        Args:
            text: the text to type.
            element: the input's number from the observation (default: the focused field).
            submit: press Enter afterwards.
        """
        def act(page: Any) -> None:
            if element is not None:
                page.fill(self._selector(element), text)
            else:
                page.keyboard.type(text)
            if submit:
                page.keyboard.press("Enter")
        return self._act("type", {"text": text, "element": element, "submit": submit}, act)

    def scroll(self, direction: str = "down") -> list:
        """Scroll the page by most of a screen.

        Args:
            direction: "down" or "up".
        """
        def act(page: Any) -> None:
            if direction not in ("down", "up"):
                raise ValueError("direction must be 'down' or 'up'")
            dy = self.config.viewport_height * 0.8
            page.mouse.wheel(0, dy if direction == "down" else -dy)
        return self._act("scroll", {"direction": direction}, act)

    def go_back(self) -> list:
        """Go back to the previous page."""
        return self._act("go_back", {}, lambda page: page.go_back())

    def answer(self, text: str) -> str:
        """Give the final answer to the user and end the episode.

        Args:
            text: the answer, or why the task cannot be done.
        """
        if self._rec is None:
            raise RuntimeError("call reset() first")
        if self._over:
            return f"The episode is over ({self._over})."
        self._rec.begin("answer", {"text": text}, url=safe_url(self._page))
        self._rec.end(self._rec.last_png)
        self._rec.final_answer = text
        self._over = "answered"
        return "Answer recorded. The episode is over."

    # ---- what the rewards and tests read (properties: not offered as tools) -------------------
    @property
    def trajectory(self) -> Trajectory:
        """The episode for the rewards; raises `TrajectoryError` after an episode error unless
        `score_episode_errors` (the rewards then give `None` with the reason)."""
        if self._rec is None:
            raise TrajectoryError("the browser environment was never reset", field="environments")
        if self._rec.error and not self.config.score_episode_errors:
            raise TrajectoryError(f"episode error: {self._rec.error}", field="environments")
        return self._rec.trajectory()

    @property
    def recorded_trajectory(self) -> Trajectory | None:
        """The episode as recorded, episode errors included."""
        return None if self._rec is None else self._rec.trajectory()

    @property
    def episode_error(self) -> str | None:
        return None if self._rec is None else self._rec.error

    @property
    def task(self) -> BrowserTask | None:
        return self._btask

    @property
    def done(self) -> bool:
        return self._over is not None

    @property
    def site_state(self) -> dict[str, Any]:
        """The live state of this episode's site (cart, orders, bookings)."""
        if self._btask is None or self._sid is None:
            return {}
        return (self._server or default_server()).state(self._sid, self._btask.site)

    @property
    def browser_process(self) -> BrowserProcess:
        return self._proc

    def __enter__(self) -> BrowserEnv:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self._shutdown()

def close_all() -> None:
    """Shut down every live environment's browser and this thread's Playwright driver (tests, the
    end of a training script): afterwards the thread can run `asyncio.run` again."""
    for env in list(LIVE):
        env._shutdown()
    stop_driver()
