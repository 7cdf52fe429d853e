"""The reward service holds decoded pixels within the decode budget, not one image per request
(issue 38 §3), measured on a real `serve-reward` process on 127.0.0.1 (recipes/probe_service_exposure.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
PROBE = Path(__file__).resolve().parents[2] / "recipes" / "probe_service_exposure.py"


def test_near_limit_screenshots_sent_at_once_stay_within_the_decode_budget():
    """8 verifications at once, each with one 4500x4500 RGBA screenshot (~110 kB as PNG, 81 MB
    decoded). Bound: the service's peak RSS grows less than 550 MB (the 256 MB decode budget plus
    what the decoder threads' arenas keep). Before the budget it held every request's image at once:
    +906 MB here (86 -> 992 MB), and 16 at 6300 px took it from 86 to 2,119 MB (now 586 MB)."""
    done = subprocess.run([sys.executable, str(PROBE), "pixels", "--n", "8", "--side", "4500"], check=False,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["statuses"] == [200] * 8, got
    assert got["peak_rss_mb"] - got["rss_mb"][0] < 550, got
