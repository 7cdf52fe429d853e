import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "reward"))  # reward_fakes

import reward_fakes


@pytest.fixture(autouse=True)
def _fresh():
    from reward import clear_sessions

    clear_sessions()
    reward_fakes.CALLS.clear()
    reward_fakes.FAIL_TASKS.clear()
    yield
    clear_sessions()
