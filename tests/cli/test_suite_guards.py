"""The suite's own guards (issue 14, section 3): under CI a missing prerequisite fails, never skips.

Each case runs pytest in a subprocess on small existing tests, with the environment a CI job would
have, and checks the outcome pytest reports for each of them. The two tests that need the shared
data (one through the `shared_data` fixture, one through the calibration cases) share a run per
environment: a pytest start costs about 1.5 s of CPU, the checks are per test either way.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED_TEST = "tests/pipeline/test_real_trajectories.py::test_fara_alltrails_end_to_end"


def _pytest(*args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items()
            if k not in ("CI", "CUA_REQUIRE_ENGINE", "CUA_SKIP_ENGINE", "CUA_SHARED_DATA", "PYTEST_ADDOPTS")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=REPO, env={**base, "PYTHONPATH": str(REPO), **env}, capture_output=True,
                          text=True, timeout=120, check=False)


def test_skipping_the_engine_tier_is_an_error_when_ci_requires_it():
    got = _pytest("--collect-only", "tests/e2e/test_demo_port.py", CUA_REQUIRE_ENGINE="1", CUA_SKIP_ENGINE="1")
    assert got.returncode == 4, got.stdout + got.stderr  # pytest's usage-error status
    assert "CUA_REQUIRE_ENGINE=1" in got.stderr
    got = _pytest("--collect-only", "--no-engine", "tests/e2e/test_demo_port.py", CUA_REQUIRE_ENGINE="1")
    assert got.returncode == 4


CALIBRATION_REAL = "tests/calibration/test_calibration_suite.py::test_real_trajectories_join_by_reference"
NEEDS_SHARED = (SHARED_TEST, CALIBRATION_REAL)


def _outcomes(stdout: str) -> dict[str, str]:
    """Per test id, the outcome its verbose line reports (PASSED, FAILED, ERROR, SKIPPED)."""
    got = {}
    for line in stdout.splitlines():
        test, _, rest = line.partition(" ")
        if test in NEEDS_SHARED and rest.split(" ", 1)[0] in ("PASSED", "FAILED", "ERROR", "SKIPPED"):
            got[test] = rest.split(" ", 1)[0]
    return got


#: Every spelling of "this is CI" the suite honours (issue 20: CI=1 and CUA_REQUIRE_ENGINE=1 used to
#: skip the calibration cases; only CI exactly "true" failed them).
@pytest.mark.parametrize("ci_env", [{"CI": "true"}, {"CI": "1"}, {"CUA_REQUIRE_ENGINE": "1"}])
def test_missing_shared_data_fails_under_ci(ci_env, tmp_path):
    got = _pytest("-vv", *NEEDS_SHARED, CUA_SHARED_DATA=str(tmp_path / "absent" / "data"), **ci_env)
    assert got.returncode == 1, got.stdout
    outcomes = _outcomes(got.stdout)
    assert outcomes[SHARED_TEST] in ("FAILED", "ERROR"), got.stdout  # the fixture fails: an error
    assert outcomes[CALIBRATION_REAL] == "FAILED", got.stdout
    assert "CUA_SHARED_DATA" in got.stdout  # the hint names the variable the suite reads


def test_missing_shared_data_skips_locally(tmp_path):
    got = _pytest("-vv", *NEEDS_SHARED, CUA_SHARED_DATA=str(tmp_path / "absent" / "data"))
    assert got.returncode == 0 and "2 skipped" in got.stdout, got.stdout
    assert _outcomes(got.stdout) == dict.fromkeys(NEEDS_SHARED, "SKIPPED"), got.stdout


def test_no_importorskip_on_the_projects_own_modules():
    """An import error in our own code must fail the suite, not turn into a skip."""
    own = ("verifier", "reward", "serving")
    found = []
    for path in (REPO / "tests").rglob("*.py"):
        for m in re.finditer(r"importorskip\(\s*[\"']([\w.]+)", path.read_text()):
            if m.group(1).split(".")[0] in own:
                found.append(f"{path.relative_to(REPO)}: {m.group(1)}")
    assert found == []


@pytest.mark.parametrize("value, required", [("true", True), ("1", True), ("True", True), ("yes", True),
                                             ("", False), ("0", False), ("false", False)])
def test_any_true_ci_value_requires_the_prerequisites(monkeypatch, value, required):
    from suite_env import required_here

    monkeypatch.delenv("CUA_REQUIRE_ENGINE", raising=False)
    monkeypatch.setenv("CI", value)
    assert required_here() is required
    monkeypatch.setenv("CUA_REQUIRE_ENGINE", "1")
    assert required_here()


def test_engine_samples_come_from_cua_shared_data(tmp_path):
    """tests/e2e/test_pipeline_engine.py finds the real trajectories where CUA_SHARED_DATA says, not
    only in ../shared beside the checkout."""
    (tmp_path / "data" / "trajectories" / "sample-from-elsewhere").mkdir(parents=True)
    got = _pytest("--collect-only", "tests/e2e/test_pipeline_engine.py", CUA_SHARED_DATA=str(tmp_path / "data"))
    assert "test_real_sample_trajectory[sample-from-elsewhere]" in got.stdout, got.stdout + got.stderr
