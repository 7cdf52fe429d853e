"""Fixtures for the viewer tests: a results file with a rich, a hostile and an unscored rollout."""

from __future__ import annotations

import pytest

from .helpers import demo_results


@pytest.fixture
def demo(tmp_path):
    return demo_results(tmp_path)
