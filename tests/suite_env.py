"""What the suite needs from its surroundings, read in one place: where the shared real data lives
and whether a missing prerequisite must fail here (CI) rather than skip (a laptop).

`required_here()`: `CI` set to any true value (`true`, `1`, `yes`, any case: CI systems differ) or
`CUA_REQUIRE_ENGINE=1` (tests/run_all.sh). `shared_data_dir()`: `$CUA_SHARED_DATA`, else
`../shared/data` beside the checkout. Every test that skips on a missing prerequisite goes through
`missing()`, so none of them can pass in CI by skipping.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NoReturn

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA_ENV = "CUA_SHARED_DATA"


def required_here(*extra: str) -> bool:
    """Must missing prerequisites fail? `extra`: more variables that require it when set to 1."""
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    return any(os.environ.get(name) == "1" for name in ("CUA_REQUIRE_ENGINE", *extra))


def shared_data_dir() -> Path:
    return Path(os.environ.get(SHARED_DATA_ENV) or REPO_ROOT.parent / "shared" / "data")


def missing(msg: str, *extra: str) -> NoReturn:
    """Fail when `required_here(*extra)`, else skip, with `msg` either way."""
    if required_here(*extra):
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


def load_recipe(file: str, name: str):
    """A `recipes/` script imported by path as module `name` (registered first: its dataclasses
    resolve their annotations through `sys.modules`)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "recipes" / file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


BASE_VENV = REPO_ROOT / ".cache" / "base-venv"


def base_venv() -> Path:
    """The python of a venv holding only the project's base dependencies (`pip install -c
    locks/dev.txt -e .`, no extras: the README's quick start), built once and cached under `.cache/base-venv` (rebuilt when pyproject.toml or the lock changes):
    the base-install client test and the installed-wheel test share it (each built its own, ~2-4
    min of the slow tier apiece)."""
    lock = REPO_ROOT / "locks" / "dev.txt"
    stamp = hashlib.sha256((REPO_ROOT / "pyproject.toml").read_bytes() + lock.read_bytes()).hexdigest()[:16]
    python = BASE_VENV / "bin" / "python"
    if python.exists() and (BASE_VENV / "stamp").exists() and (BASE_VENV / "stamp").read_text() == stamp:
        return python
    shutil.rmtree(BASE_VENV, ignore_errors=True)
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(BASE_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "-c", str(lock), "-e", str(REPO_ROOT)], check=True, timeout=900)
    (BASE_VENV / "stamp").write_text(stamp)
    print(f"base venv built in {time.monotonic() - t0:.0f} s")
    return python
