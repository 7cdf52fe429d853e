"""Fixtures for the experiment tests: prompt overlay folders written on the fly."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pipeline"))  # pipeline_helpers.make_traj
sys.path.insert(0, str(Path(__file__).resolve().parent))  # experiment_helpers

from experiment_helpers import write_overlay


@pytest.fixture
def overlay_factory(tmp_path):
    def make(name: str, extra: str, sub: str = "overlay") -> Path:
        return write_overlay(tmp_path / sub, name, extra)
    return make
