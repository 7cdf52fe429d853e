"""Launching Debian's Chromium through Playwright, and killing it when it must die.

One Playwright driver per thread (the sync API is bound to the thread that started it; TRL calls
environments from its main thread); one Chromium per environment instance, so a crashed or killed
browser ends only its own episode. Each launch carries a unique marker switch, which is how
`pids()` finds the process to kill (Playwright's Python API does not expose it): the watchdog
and the crash tests use it.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import uuid
from typing import Any

from .config import BrowserUnavailable, EnvConfig, chromium_path

_local = threading.local()
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
               "--disable-extensions", "--disable-background-networking", "--mute-audio"]


def playwright_driver() -> Any:
    """This thread's started Playwright (sync API), created on first use."""
    driver = getattr(_local, "driver", None)
    if driver is None:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as exc:
            raise BrowserUnavailable("Playwright is missing: pip install 'cua-verifier[browser]'") from exc
        driver = sync_playwright().start()
        _local.driver = driver
        atexit.register(_stop_driver, driver)
    return driver


def stop_driver() -> None:
    """Stop this thread's Playwright driver (it is restarted on next use).

    Why it matters: while the sync driver runs, its event loop stays registered as this thread's
    running loop, so `asyncio.run` (and async test frameworks) refuse to start on the thread.
    Close the environments first: their browsers belong to the driver.
    """
    driver = getattr(_local, "driver", None)
    if driver is not None:
        _local.driver = None
        _stop_driver(driver)


def _stop_driver(driver: Any) -> None:
    with contextlib.suppress(Exception):  # interpreter shutdown: the driver may already be gone
        driver.stop()


class BrowserProcess:
    """One Chromium, relaunched on demand when it died."""

    def __init__(self, config: EnvConfig) -> None:
        self.config = config
        self.marker = f"--cua-env-browser={uuid.uuid4().hex}"
        self.browser: Any = None

    def ensure(self) -> Any:
        if self.browser is None or not self.browser.is_connected():
            self.close()
            exe = chromium_path(self.config.executable_path)
            self.browser = playwright_driver().chromium.launch(
                executable_path=exe, headless=self.config.headless, args=[*LAUNCH_ARGS, self.marker],
                timeout=max(30_000, self.config.page_load_timeout_s * 1000))
        return self.browser

    def alive(self) -> bool:
        return self.browser is not None and self.browser.is_connected()

    def pids(self) -> list[int]:
        """Processes launched with this browser's marker switch (Linux /proc)."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if self.marker.encode() in fh.read():
                        found.append(int(entry))
            except OSError:
                continue
        return found

    def kill(self) -> list[int]:
        """SIGKILL the browser (what a crash or an OOM kill looks like); returns the pids."""
        pids = self.pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return pids

    def close(self) -> None:
        if self.browser is not None:
            with contextlib.suppress(Exception):  # already dead: nothing to close
                self.browser.close()
            self.browser = None
        self.kill()  # leave no orphan behind, whatever state the driver was in
