"""`cua-verifier calibrate` end to end against the real CPU judge (tiny random-weight Qwen2-VL).

Random weights make every verdict meaningless, so this checks the plumbing and the report's
shape: each selected rule is reported with its cases, every case is either scored (a result with
calls and the engine's model) or unscored with a typed judge error, the suite rates follow from
the counts, the JSON equals what was printed, and the real trajectory (X2) is judged from
../shared/data or $CUA_SHARED_DATA (under CI its absence is a failure, locally it is left out of the
selection).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pipeline_support import typed_judge_failure
from suite_env import required_here

from verifier.calibrate import CalibrationReport, load_suite

pytestmark = pytest.mark.engine

REPO = Path(__file__).resolve().parents[2]
# a blocker, partial credit, a run that ran out of steps, and a 121-step history that once overflowed
# the demo judge's 32k context (issue 24: every call is now budgeted, so every case is scored)
RULES = ["O5", "R3", "H1", "H2"]  # in the suite's order, which the report keeps


def test_calibrate_command_on_the_cpu_engine(engine, tmp_path: Path) -> None:
    only = list(RULES)
    x2 = load_suite(REPO / "examples" / "calibration", only=["X2"])[0]
    if x2.unavailable:
        if required_here():
            pytest.fail(f"shared data absent in CI: {x2.unavailable} (set CUA_SHARED_DATA)")
    else:
        only.append("X2")
    config = tmp_path / "settings.json"
    config.write_text(json.dumps({"judge": {
        "api_key_env": "CUA_E2E_JUDGE_KEY", "image_max_side": 224, "timeout_s": 120, "transport_retries": 1,
        "sampling": {"max_tokens": 8192}}}))
    out = tmp_path / "report.json"
    env = {**os.environ, "CUA_E2E_JUDGE_KEY": engine.api_key}
    cli = Path(sys.executable).with_name("cua-verifier")
    t0 = time.monotonic()
    proc = subprocess.run([str(cli), "calibrate", "--judge-url", engine.base_url, "--model", engine.model,
                           "--config", str(config), "--only", *only, "--out", str(out), "--concurrency", "4",
                           "--no-progress"], check=False, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=900)
    print(f"\n[calibrate] {len(only)} rules in {time.monotonic() - t0:.0f}s, exit {proc.returncode}")
    assert proc.returncode in (0, 3), proc.stderr[-3000:]
    h1 = [v for v in CalibrationReport.model_validate_json(out.read_text()).cases if v.case.startswith("h1-")]
    assert h1 and h1[0].status == "scored", [(v.case, v.error) for v in h1]
    rep = CalibrationReport.model_validate_json(out.read_text())

    assert [r.rule for r in rep.rules] == only and rep.selected_rules == only
    expected_cases = sorted(c.name for c in load_suite(REPO / "examples" / "calibration", only=only))
    assert sorted(v.case for v in rep.cases) == expected_cases
    for r in rep.rules:
        assert r.cases and len(r.expected_outcomes) == len(r.got_outcomes) == len(r.cases)
    for v in rep.cases:
        assert v.status in ("scored", "unscored"), v  # nothing unavailable: X2 was only selected if present
        if v.status == "scored":
            assert v.got_outcome is not None and v.outcome_ok == (v.got_outcome == v.expected_outcome)
        else:
            assert typed_judge_failure(v.error), v.error  # a typed judge failure, not a crash
    assert all(v.status == "scored" for v in rep.cases), [(v.case, v.error) for v in rep.cases]
    assert proc.returncode == 0

    o = rep.outcome  # the rates follow from the counts
    scored = [v for v in rep.cases if v.status == "scored"]
    assert o.tp + o.fp + o.tn + o.fn == len(scored) and o.unscored == len(rep.cases) - len(scored)
    assert o.fp == sum(1 for v in scored if v.got_outcome and not v.expected_outcome)
    neg, pos = o.fp + o.tn, o.tp + o.fn
    assert o.fpr == (o.fp / neg if neg else None) and o.fnr == (o.fn / pos if pos else None)
    assert rep.judge_model == engine.model and not rep.demo_judge

    printed = proc.stdout
    for r in rep.rules:
        assert any(line.startswith(r.rule + " ") for line in printed.splitlines()), printed
    assert f"tp {o.tp}, fp {o.fp}, tn {o.tn}, fn {o.fn}, unscored {o.unscored}" in printed
    assert f"report written to {out}" in printed
