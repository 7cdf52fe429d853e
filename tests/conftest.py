"""Shared test options and fixtures.

`--no-engine` (or CUA_SKIP_ENGINE=1) skips the real-vLLM end-to-end tier for fast local runs.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--no-engine", action="store_true", default=False,
                     help="skip tests marked 'engine' (real vLLM server on CPU)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--no-engine") or os.environ.get("CUA_SKIP_ENGINE") == "1":
        skip = pytest.mark.skip(reason="engine tier disabled (--no-engine / CUA_SKIP_ENGINE=1)")
        for item in items:
            if "engine" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the repo; tests that need it skip cleanly when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data not present")
    return SHARED_DATA
