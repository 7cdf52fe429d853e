"""What the repository tracks must work on any machine: no link to a path outside the clone.

Two symlinks to a developer's own framework environments (`.venv-verl -> /work/...`) were once
committed by accident: in a fresh clone on that machine the tests then used someone else's
environment instead of building their own, and elsewhere they dangled.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def tracked() -> list[tuple[str, str]]:
    """(mode, path) of every tracked file."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [(line.split()[0], line.split("\t", 1)[1]) for line in out.splitlines()]


def test_no_tracked_symlink_leads_outside_the_clone():
    for mode, path in tracked():
        if mode != "120000":  # git's mode for a symlink
            continue
        target = os.readlink(REPO / path)
        assert not os.path.isabs(target), f"{path} links to the absolute path {target}"
        assert os.path.realpath(REPO / path).startswith(str(REPO.resolve()) + os.sep), f"{path} leaves the clone"


def test_no_environment_is_tracked():
    envs = [path for _, path in tracked() if path.split("/", 1)[0].startswith(".venv")]
    assert envs == [], f"virtual environments are built by tests/run_all.sh, never committed: {envs}"
