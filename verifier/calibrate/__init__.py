"""Calibration: run the verifier over a suite of cases with known verdicts and report, rule by rule,
where the judge agrees with a careful human and where it is too lenient or too strict.

    from verifier.calibrate import load_suite, run_suite, build_report
    cases = load_suite("examples/calibration", only=["O2", "R1"])
    runs = await run_suite(cases, judge=judge, config=VerifierConfig())
    report = build_report(cases, runs, judge_model="my-judge")
    print(format_report(report))

The suite format (one folder per case, `expected.json` beside the trajectory) is described in
examples/calibration/make_calibration.py and the README section "Calibration".
"""
from __future__ import annotations

from .report import (
           CalibrationReport,
           CaseVerdict,
           OutcomeRates,
           RuleReport,
           build_report,
           format_report,
           match,
)
from .rules import RULE_IDS, RULES
from .runner import CaseRun, run_suite
from .suite import Case, Expectation, ProcessBand, SuiteError, default_suite_dir, load_suite

__all__ = ["RULES", "RULE_IDS", "CalibrationReport", "Case", "CaseRun", "CaseVerdict", "Expectation",
           "OutcomeRates", "ProcessBand", "RuleReport", "SuiteError", "build_report", "default_suite_dir",
           "format_report", "load_suite", "match", "run_suite"]
