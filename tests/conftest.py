"""Shared test options and fixtures.

`--no-engine` (or CUA_SKIP_ENGINE=1) skips the real-vLLM end-to-end tier for fast local runs.

Guards against a suite that passes by skipping: with CUA_REQUIRE_ENGINE=1 (CI) asking to skip
the engine tier is an error, not a skip; under CI (CI=true or CUA_REQUIRE_ENGINE=1) tests that need
the shared data (../shared/data, or CUA_SHARED_DATA) fail when it is missing instead of skipping.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from suite_env import REPO_ROOT, missing, required_here, shared_data_dir

SHARED_DATA = shared_data_dir()


def in_ci() -> bool:
    """CI runs must not turn missing prerequisites into skips (see suite_env.required_here)."""
    return required_here()


def engine_skip_requested(config: pytest.Config) -> bool:
    return bool(config.getoption("--no-engine")) or os.environ.get("CUA_SKIP_ENGINE") == "1"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--no-engine", action="store_true", default=False,
                     help="skip tests marked 'engine' (real vLLM server on CPU)")


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("CUA_REQUIRE_ENGINE") == "1" and engine_skip_requested(config):
        raise pytest.UsageError("CUA_REQUIRE_ENGINE=1 (CI) but the engine tier is disabled by --no-engine or "
                                "CUA_SKIP_ENGINE=1: unset one of them")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if engine_skip_requested(config):
        skip = pytest.mark.skip(reason="engine tier disabled (--no-engine / CUA_SKIP_ENGINE=1)")
        for item in items:
            if "engine" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the repo (or CUA_SHARED_DATA): skip locally when absent, fail under CI."""
    if not SHARED_DATA.is_dir():
        missing(f"shared data not present at {SHARED_DATA} (set CUA_SHARED_DATA)")
    return SHARED_DATA


def require_browser() -> None:
    """Chromium (Debian's package) + Playwright, or skip with the fix in the reason; under CI
    (CI=true, CUA_REQUIRE_ENGINE=1 or CUA_REQUIRE_BROWSER=1) fail instead, so CI cannot pass by
    skipping the browser tier (tests/env, tests/viewer, the browser GRPO engine test)."""
    try:
        import playwright.sync_api  # noqa: F401

        from browser_env.config import chromium_path

        chromium_path()
    except Exception as exc:  # noqa: BLE001 - ImportError or BrowserUnavailable: the message says which
        missing(f"browser tier needs Chromium + Playwright: {exc}", "CUA_REQUIRE_BROWSER")


@pytest.fixture(scope="session")
def browser_ok() -> None:
    require_browser()


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built once per session (`python -m build --wheel --no-isolation`): the
    packaging tests (tests/test_packaging.py, tests/viewer/test_viewer_packaging.py) read the same one."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
                   cwd=REPO_ROOT, check=True, capture_output=True)
    wheels = list(out.glob("cua_verifier-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]
