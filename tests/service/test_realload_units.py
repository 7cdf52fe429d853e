"""The benchmark's CPU accounting: which process used the machine's cores during a load."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

psutil = pytest.importorskip("psutil")


def test_cpu_shares_attribute_the_cores_to_the_process_that_used_them():
    from serving.reward_service.realload import CpuShares

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.3)  # its start-up is not part of the window
        shares = CpuShares(judge=psutil.Process(sleeper.pid), client=psutil.Process())
        end = time.monotonic() + 0.6
        while time.monotonic() < end:  # this process (the "client") burns one core
            sum(range(1000))
        out = shares.cores(service_cpu=0.0)
    finally:
        sleeper.kill()
        sleeper.wait()
    cores = psutil.cpu_count()
    assert out["client"] > 0.3 and out["judge"] < 0.1 and out["service"] == 0.0
    assert 0.0 <= out["idle"] <= cores and out["other"] >= 0.0
    assert sum(out.values()) == pytest.approx(cores, abs=0.35 + 0.05 * cores)  # rounding, sampling
