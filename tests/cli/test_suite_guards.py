"""The suite's own guards (issue 14, section 3): under CI a missing prerequisite fails, never skips.

Each case runs pytest in a subprocess on one small existing test, with the environment a CI job
would have, and checks the outcome pytest reports.
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


@pytest.mark.parametrize("ci_env", [{"CI": "true"}, {"CUA_REQUIRE_ENGINE": "1"}])
def test_missing_shared_data_fails_under_ci(ci_env, tmp_path):
    got = _pytest(SHARED_TEST, CUA_SHARED_DATA=str(tmp_path / "absent"), **ci_env)
    assert got.returncode == 1 and re.search(r"\b1 (failed|error)", got.stdout), got.stdout


def test_missing_shared_data_skips_locally(tmp_path):
    got = _pytest(SHARED_TEST, CUA_SHARED_DATA=str(tmp_path / "absent"))
    assert got.returncode == 0 and "1 skipped" in got.stdout, got.stdout


def test_no_importorskip_on_the_projects_own_modules():
    """An import error in our own code must fail the suite, not turn into a skip."""
    own = ("verifier", "reward", "serving")
    found = []
    for path in (REPO / "tests").rglob("*.py"):
        for m in re.finditer(r"importorskip\(\s*[\"']([\w.]+)", path.read_text()):
            if m.group(1).split(".")[0] in own:
                found.append(f"{path.relative_to(REPO)}: {m.group(1)}")
    assert found == []


CALIBRATION_REAL = "tests/calibration/test_calibration_suite.py::test_real_trajectories_join_by_reference"


@pytest.mark.parametrize("value, required", [("true", True), ("1", True), ("True", True), ("yes", True),
                                             ("", False), ("0", False), ("false", False)])
def test_any_true_ci_value_requires_the_prerequisites(monkeypatch, value, required):
    from suite_env import required_here

    monkeypatch.delenv("CUA_REQUIRE_ENGINE", raising=False)
    monkeypatch.setenv("CI", value)
    assert required_here() is required
    monkeypatch.setenv("CUA_REQUIRE_ENGINE", "1")
    assert required_here()


@pytest.mark.parametrize("ci_env", [{"CI": "1"}, {"CUA_REQUIRE_ENGINE": "1"}])
def test_calibration_real_cases_fail_under_every_ci_spelling(ci_env, tmp_path):
    """Issue 20: this check failed only for CI exactly "true"; CI=1 or CUA_REQUIRE_ENGINE=1 skipped it."""
    got = _pytest(CALIBRATION_REAL, CUA_SHARED_DATA=str(tmp_path / "absent" / "data"), **ci_env)
    assert got.returncode == 1 and "1 failed" in got.stdout, got.stdout
    assert "CUA_SHARED_DATA" in got.stdout  # the hint names the variable the suite reads


def test_calibration_real_cases_skip_locally(tmp_path):
    got = _pytest(CALIBRATION_REAL, CUA_SHARED_DATA=str(tmp_path / "absent" / "data"))
    assert got.returncode == 0 and "1 skipped" in got.stdout, got.stdout


def test_engine_samples_come_from_cua_shared_data(tmp_path):
    """tests/e2e/test_pipeline_engine.py finds the real trajectories where CUA_SHARED_DATA says, not
    only in ../shared beside the checkout."""
    (tmp_path / "data" / "trajectories" / "sample-from-elsewhere").mkdir(parents=True)
    got = _pytest("--collect-only", "tests/e2e/test_pipeline_engine.py", CUA_SHARED_DATA=str(tmp_path / "data"))
    assert "test_real_sample_trajectory[sample-from-elsewhere]" in got.stdout, got.stdout + got.stderr
