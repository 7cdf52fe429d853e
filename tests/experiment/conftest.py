"""Fixtures for the experiment tests: prompt overlay folders written on the fly."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pipeline"))  # pipeline_helpers.make_traj

from verifier.prompts import prompts_dir


def write_overlay(folder: Path, name: str, extra: str, *, version: str = "99") -> Path:
    """An overlay replacing packaged template `name` with its own text plus `extra` (version bumped)."""
    source = (prompts_dir() / name).read_text(encoding="utf-8")
    head, _, rest = source.partition("#}")
    head = head.rsplit("version:", 1)[0] + f"version: {version} "
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{head}#}}{rest.rstrip()}\n{extra}\n", encoding="utf-8")
    return folder


@pytest.fixture
def overlay_factory(tmp_path):
    def make(name: str, extra: str, sub: str = "overlay") -> Path:
        return write_overlay(tmp_path / sub, name, extra)
    return make
