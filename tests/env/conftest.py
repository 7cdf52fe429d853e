"""The browser tier: real Chromium (Debian's package) through Playwright, on the loopback sites.

Without `chromium` (or Playwright) the tier skips with the fix in the reason; under CI=true (or
CUA_REQUIRE_BROWSER=1) it fails instead, so CI cannot pass by skipping it.
"""
from __future__ import annotations

import pytest

from browser_env import BrowserEnv, EnvConfig, close_all

SMALL = {"viewport_width": 480, "viewport_height": 320}



@pytest.fixture(scope="module", autouse=True)
def _no_driver_left_behind():
    """Playwright's sync driver keeps its event loop registered as the running loop of this
    thread; the async tests of other folders (same process) need it gone after each module."""
    yield
    close_all()




@pytest.fixture(scope="module")
def env(browser_ok):
    """One environment (one Chromium) shared by a module's tests; every test resets it."""
    with BrowserEnv(EnvConfig(**SMALL)) as e:
        yield e


@pytest.fixture
def make_env(browser_ok):
    """A factory for environments with their own bounds (a fresh Chromium each)."""
    def make(**overrides) -> BrowserEnv:
        return BrowserEnv(EnvConfig(**{**SMALL, **overrides}))
    return make
