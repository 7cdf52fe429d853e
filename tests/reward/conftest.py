"""Fixtures shared by the reward tests."""
from __future__ import annotations

import pytest
import reward_fakes

from reward import clear_sessions


@pytest.fixture(autouse=True)
def _fresh():
    """Every test starts with no cached sessions and empty fake-verifier logs, and leaves none."""
    clear_sessions()
    reward_fakes.CALLS.clear()
    reward_fakes.KEYS.clear()
    reward_fakes.FAIL_TASKS.clear()
    reward_fakes.SEEN.clear()
    yield
    reward_fakes.SCRIPTED = None
    clear_sessions()
