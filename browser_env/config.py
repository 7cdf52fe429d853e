"""Environment settings: viewport, episode bounds and where Chromium is."""
from __future__ import annotations

import os
import shutil

from pydantic import BaseModel, ConfigDict, Field

ENV_CHROMIUM = "CUA_CHROMIUM"
#: Longer side (px) of the screenshots a training recipe shows the policy. A 1280x800 screenshot is
#: 448x280 then, 16x10 = 160 tokens for a Qwen2-VL-style policy instead of ~1.3 k, so a 15-step
#: episode fits a usual completion budget; the recording the judge reads keeps full size.
DEFAULT_POLICY_MAX_SIDE = 448


class BrowserUnavailable(RuntimeError):
    """No Chromium to launch (or Playwright missing): a setup problem, named with its fix."""


class EnvConfig(BaseModel):
    """Bounds that keep an episode from ever hanging a training step.

    `action_timeout_s` bounds each Playwright call (click, type, screenshot); `page_load_timeout_s`
    bounds navigations; a tool call that still runs after `watchdog_s` gets its browser killed (the
    blocked call then fails and the episode ends with an error). `max_steps` is the step budget.
    """

    model_config = ConfigDict(extra="forbid")

    viewport_width: int = Field(default=960, ge=200, le=3840)
    viewport_height: int = Field(default=600, ge=200, le=2160)
    max_steps: int = Field(default=12, ge=1)
    action_timeout_s: float = Field(default=5.0, gt=0)
    page_load_timeout_s: float = Field(default=10.0, gt=0)
    watchdog_s: float = Field(default=30.0, gt=0)
    max_elements: int = Field(default=40, ge=1, description="interactive elements listed per observation")
    initial_screenshot: bool = Field(
        default=True, description="reset() returns the start page's screenshot too (else its text only)")
    score_episode_errors: bool = Field(
        default=False, description="judge episodes that ended in an episode error (default: reward None)")
    policy_max_side: int | None = Field(default=None, ge=64, description=(
        "longer side of the screenshots returned to the policy (None: full size); recordings keep full size"))
    executable_path: str | None = None
    headless: bool = True


def chromium_path(explicit: str | None = None) -> str:
    """The Chromium binary: `explicit`, $CUA_CHROMIUM, or `chromium` on PATH (Debian's package)."""
    for candidate in (explicit, os.environ.get(ENV_CHROMIUM), shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise BrowserUnavailable("no Chromium found: run `bash browser_env/setup_chromium.sh` (Debian: "
                             "apt-get install -y chromium) or set $CUA_CHROMIUM to the binary")
