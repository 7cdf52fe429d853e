"""The suite runs the linters the project declares (issue 14, habits): ruff over the repo and mypy
over the packages (`verifier/`, `reward/`, `serving/`, `cua_verifier/`; config in pyproject
`[tool.mypy]`). Both fail on any finding. The import layering (`lint-imports`) is tests/test_layers.py.

Both are fast when warm (ruff well under a second; mypy reuses `.mypy_cache`, a few seconds); a
cold mypy run over the four packages takes about 18 s of CPU (large third-party packages are skipped, see pyproject).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _tool(name: str) -> list[str]:
    beside = Path(sys.executable).with_name(name)
    if beside.exists():
        return [str(beside)]
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]'", pytrace=False)
    return [found]


def test_ruff_finds_nothing():
    got = subprocess.run([*_tool("ruff"), "check", "--output-format", "concise", "."], cwd=REPO,
                         capture_output=True, text=True, timeout=120, check=False)
    assert got.returncode == 0, got.stdout[-6000:] + got.stderr[-2000:]


def test_mypy_core_package_is_clean():
    got = subprocess.run([*_tool("mypy")], cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert got.returncode == 0, got.stdout[-6000:] + got.stderr[-2000:]
    assert "no issues found" in got.stdout
