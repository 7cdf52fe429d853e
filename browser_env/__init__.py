"""A real browser for training computer-use agents: Debian's Chromium driven by Playwright on small
stateful task sites served on loopback, as a TRL `environment_factory` (`BrowserEnv`).

Optional extra: ``pip install 'cua-verifier[browser]'`` plus Chromium
(``bash browser_env/setup_chromium.sh``). Importing this package does not import Playwright.
"""
from __future__ import annotations

from .config import BrowserUnavailable, EnvConfig, chromium_path
from .env import BrowserEnv, close_all
from .server import default_server
from .tasks import TASKS, BrowserTask, get_task, task_rows
from .verified import VerifiedBrowserEnv

__all__ = [
           "TASKS",
           "BrowserEnv",
           "BrowserTask",
           "BrowserUnavailable",
           "EnvConfig",
           "VerifiedBrowserEnv",
           "chromium_path",
           "close_all",
           "default_server",
           "get_task",
           "task_rows",
]
