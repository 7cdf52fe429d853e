"""Fixtures for pipeline tests (helpers live in pipeline_helpers.py)."""
import pytest
from pipeline_helpers import make_traj


@pytest.fixture
def traj4():
    return make_traj(4)
