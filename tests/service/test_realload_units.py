"""The benchmark's CPU accounting: which process used the machine's cores during a load."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

psutil = pytest.importorskip("psutil")


def test_cpu_shares_attribute_the_cores_to_the_process_that_used_them():
    from serving.perf.bounds import CpuShares

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


def test_summary_gives_median_and_range_of_each_noisy_figure():
    from serving.perf.realload import summarize

    def run(cpu, rate, peak, after):
        return {"cpu_s_per_verification": cpu, "per_minute": rate, "rss_mb": {"baseline": 86, "peak": peak,
                "end_of_load": 900, "after_10s": after}}

    three = summarize([run(0.30, 110.0, 1000, 400), run(0.26, 120.0, 1100, 380), run(0.37, 100.0, 1050, 390)])
    assert three["runs"] == 3
    assert three["cpu_s_per_verification"] == {"median": 0.30, "min": 0.26, "max": 0.37}
    assert three["per_minute"] == {"median": 110.0, "min": 100.0, "max": 120.0}
    assert three["rss_peak_mb"]["median"] == 1050 and three["rss_after_10s_mb"]["max"] == 400
    two = summarize([run(0.30, 110.0, 1000, 400), run(0.20, 130.0, 1200, 380)])
    assert two["cpu_s_per_verification"]["median"] == 0.25  # even count: the mean of the middle two
