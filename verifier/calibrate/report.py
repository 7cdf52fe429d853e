"""The calibration report: expected vs got per case and per rule, and outcome FPR / FNR on the suite.

Pure functions over (case, run) pairs, so every number is unit-tested. Conventions:
- positive = outcome success. A false positive is a case a careful human fails that the judge
  passed (the lenient error RL policies exploit); FPR = fp / (fp + tn), FNR = fn / (fn + tp).
- cases with no verdict (judge failure, data unavailable) are counted apart (`unscored`) and never
  enter a rate: an outage is not a "failure" verdict.
- a rate with an empty denominator is None (printed "n/a"), never 0.
The report is a pydantic model so it serialises to JSON (`--out`) and other tools can render it.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from ..records import degraded_reason, degraded_stages
from ..result import VerificationResult
from ..rubrics import sources_line
from .rules import RULES
from .runner import CaseRun
from .suite import Case

#: A forced-failure entry written by a code veto (verifier/vetoes.py: "V3 binding action ...").
VETO_TEXT = re.compile(r"V\d ")
REPORT_SCHEMA_VERSION = "1.2"  # 1.1: penalty / violation checks per case, harm tally per rule; 1.2: code vetoes


class CaseVerdict(BaseModel):
    """One case: what a careful human expects, what the verifier said, and whether they agree."""

    case: str
    rules: list[str]
    side: str
    status: Literal["scored", "unscored", "unavailable"]
    error: str | None = None
    expected_outcome: bool
    got_outcome: bool | None = None
    outcome_ok: bool | None = None
    expected_process: str
    got_process: float | None = None
    process_ok: bool | None = None
    """None when not scored or the verifier gives no process score."""
    expected_diagnosis: list[str] = Field(default_factory=list)
    got_diagnosis: list[str] = Field(default_factory=list)
    diagnosis_ok: bool | None = None
    """None when no code is expected or no diagnosis ran; else: at least one expected code found."""
    expected_penalty: bool | None = None
    got_penalty: bool | None = None
    penalty_ok: bool | None = None
    """None when the case does not say; else whether the result has a side-effect penalty or not as
    expected (a fault charged twice shows here, not in the process band)."""
    expected_violation: bool | None = None
    got_violation: bool | None = None
    violation_ok: bool | None = None
    vetoes: list[str] = Field(default_factory=list)
    """Rule ids of the code vetoes that failed this run (verifier/vetoes.py), whatever the judge voted."""

    @property
    def agrees(self) -> bool:
        """Scored and every checked part matches."""
        return self.status == "scored" and all(x is not False for x in (
            self.outcome_ok, self.process_ok, self.diagnosis_ok, self.penalty_ok, self.violation_ok))


class Tally(BaseModel):
    """Agreements out of checks (a check is a case where both sides said something)."""

    agree: int = 0
    checked: int = 0


class RuleReport(BaseModel):
    rule: str
    statement: str
    cases: list[str]
    scored: int
    expected_outcomes: list[bool]
    got_outcomes: list[bool | None]
    outcome: Tally
    process: Tally
    diagnosis: Tally
    harm: Tally = Field(default_factory=Tally)
    """Penalty and critical-point checks together (cases that state them)."""
    agreeing_cases: int
    """Cases of this rule where every checked part agreed."""


class OutcomeRates(BaseModel):
    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0
    unscored: int = 0
    fpr: float | None = None
    fnr: float | None = None
    accuracy: float | None = None


class CodeVetoes(BaseModel):
    """What code decided on the suite, apart from the judge: under the adversarial lenient judge
    (`calibrate --adversarial`) this is the share of expected failures code still fails."""

    failures_caught: int = 0
    """Scored expected failures that a code veto failed."""
    failures: int = 0
    successes_vetoed: int = 0
    """Scored expected successes that a code veto failed: each is a false negative code made."""
    successes: int = 0


class CalibrationReport(BaseModel):
    schema_version: str = REPORT_SCHEMA_VERSION
    suite: str
    judge_model: str | None = None
    demo_judge: bool = False
    """True when the verdicts come from the random-weight CPU demo judge (meaningless)."""
    selected_rules: list[str] = Field(default_factory=list)
    outcome: OutcomeRates
    rules: list[RuleReport]
    cases: list[CaseVerdict]
    code_vetoes: CodeVetoes = Field(default_factory=CodeVetoes)
    adversarial: bool = False
    """True when the judge was the adversarial lenient judge (every verdict the judge's is a yes)."""
    wall_s: float = 0.0
    rubrics: str = ""
    """Which rubrics the cases were scored against (`rubrics.sources_line`): a rubric file's path and
    hash, the generating model, or the cases' own."""


def diagnosis_codes(result: VerificationResult) -> list[str]:
    if result.diagnosis is None:
        return []
    d = result.diagnosis
    return sorted({p.error_code for p in d.failure_points} | set(d.task_ambiguity_codes))


def match(case: Case, run: CaseRun, none_if_degraded: Collection[str] = ()) -> CaseVerdict:
    """Compare one run with its expectation (pure). A result that fell back in a stage of
    `none_if_degraded` is unscored, as in `score` and the TRL rewards (one policy): its verdict
    was never checked, so it must not count as agreement or as a false positive."""
    e = case.expected
    base = {"case": case.name, "rules": e.rules, "side": e.side, "expected_outcome": e.outcome,
            "expected_process": e.process.label, "expected_diagnosis": e.diagnosis,
            "expected_penalty": e.penalty, "expected_violation": e.violation}
    r = run.result
    if r is None:
        return CaseVerdict(**base, status="unavailable" if run.unavailable else "unscored", error=run.error)
    if weak := degraded_stages(r, none_if_degraded):
        return CaseVerdict(**base, status="unscored", error=degraded_reason(r, weak))
    got_diag = diagnosis_codes(r)
    diag_ok = (None if not e.diagnosis or r.diagnosis is None else bool(set(e.diagnosis) & set(got_diag)))
    got_penalty, got_violation = bool(r.penalties), r.critical_point_violation
    return CaseVerdict(**base, status="scored", got_outcome=r.outcome_success,
                       outcome_ok=r.outcome_success == e.outcome, got_process=r.process_score,
                       process_ok=None if r.process_score is None else e.process.contains(r.process_score),
                       got_diagnosis=got_diag, diagnosis_ok=diag_ok, got_penalty=got_penalty,
                       penalty_ok=None if e.penalty is None else got_penalty == e.penalty,
                       got_violation=got_violation,
                       violation_ok=None if e.violation is None else got_violation == e.violation,
                       vetoes=sorted({f.split(" ", 1)[0] for f in r.forced_failure if VETO_TEXT.match(f)}))


def tally(flags: Sequence[bool | None]) -> Tally:
    checked = [f for f in flags if f is not None]
    return Tally(agree=sum(checked), checked=len(checked))


def rates(verdicts: Sequence[CaseVerdict]) -> OutcomeRates:
    out = OutcomeRates()
    for v in verdicts:
        if v.got_outcome is None:
            out.unscored += 1
        elif v.expected_outcome:
            out.tp, out.fn = out.tp + v.got_outcome, out.fn + (not v.got_outcome)
        else:
            out.fp, out.tn = out.fp + v.got_outcome, out.tn + (not v.got_outcome)
    neg, pos, total = out.fp + out.tn, out.tp + out.fn, out.tp + out.fp + out.tn + out.fn
    out.fpr = out.fp / neg if neg else None
    out.fnr = out.fn / pos if pos else None
    out.accuracy = (out.tp + out.tn) / total if total else None
    return out


def code_vetoes(verdicts: Sequence[CaseVerdict]) -> CodeVetoes:
    scored = [v for v in verdicts if v.status == "scored"]
    bad = [v for v in scored if not v.expected_outcome]
    good = [v for v in scored if v.expected_outcome]
    return CodeVetoes(failures_caught=sum(bool(v.vetoes) for v in bad), failures=len(bad),
                      successes_vetoed=sum(bool(v.vetoes) for v in good), successes=len(good))


def rule_report(rule: str, verdicts: Sequence[CaseVerdict]) -> RuleReport:
    mine = [v for v in verdicts if rule in v.rules]
    return RuleReport(rule=rule, statement=RULES.get(rule, ""), cases=[v.case for v in mine],
                      scored=sum(v.status == "scored" for v in mine),
                      expected_outcomes=[v.expected_outcome for v in mine],
                      got_outcomes=[v.got_outcome for v in mine],
                      outcome=tally([v.outcome_ok for v in mine]), process=tally([v.process_ok for v in mine]),
                      diagnosis=tally([v.diagnosis_ok for v in mine]),
                      harm=tally([f for v in mine for f in (v.penalty_ok, v.violation_ok)]),
                      agreeing_cases=sum(v.agrees for v in mine))


def build_report(cases: Sequence[Case], runs: Sequence[CaseRun], *, suite: str = "", judge_model: str | None = None,
                 demo_judge: bool = False, only: Sequence[str] | None = None, wall_s: float = 0.0,
                 none_if_degraded: Collection[str] = (), adversarial: bool = False) -> CalibrationReport:
    """Per-case verdicts, per-rule tallies (canonical rule order) and suite-level outcome rates."""
    by_name = {r.case: r for r in runs}
    missing = [c.name for c in cases if c.name not in by_name]
    if missing:
        raise ValueError(f"no run for case(s) {', '.join(missing)}")
    verdicts = [match(c, by_name[c.name], none_if_degraded) for c in cases]
    present = {r for v in verdicts for r in v.rules}
    selected = [r.upper() for r in only] if only else []
    order = [r for r in RULES if r in present and (not selected or r in selected)]
    return CalibrationReport(suite=suite, judge_model=judge_model, demo_judge=demo_judge, selected_rules=selected,
                             outcome=rates(verdicts), rules=[rule_report(r, verdicts) for r in order],
                             cases=verdicts, code_vetoes=code_vetoes(verdicts), adversarial=adversarial,
                             wall_s=wall_s, rubrics=sources_line(r.result.rubric_source for r in runs if r.result))


def _tf(values: Sequence[bool | None]) -> str:
    return ",".join("-" if v is None else ("T" if v else "F") for v in values)


def _rate(value: float | None, num: int, den: int) -> str:
    return "n/a (no case)" if value is None else f"{value:.3f} ({num}/{den})"


def _harm(v: CaseVerdict) -> str:
    """' (penalty expected no, got yes)' for each penalty / violation check that failed."""
    return "".join(f" ({name} expected {_yn(exp)}, got {_yn(got)})" for name, exp, got, ok in (
        ("penalty", v.expected_penalty, v.got_penalty, v.penalty_ok),
        ("violation", v.expected_violation, v.got_violation, v.violation_ok)) if ok is False)


def _yn(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "no")


def format_report(report: CalibrationReport) -> str:
    """The text `cua-verifier calibrate` prints: one line per rule, then the suite's outcome rates."""
    lines = [(f"{'rule':<5} {'cases':>5}  {'outcome expected -> got':<28} {'outcome':>7} {'process':>7} "
             f"{'diagnosis':>9} {'harm':>7}  statement")]
    for r in report.rules:
        exp_got = f"{_tf(r.expected_outcomes)} -> {_tf(r.got_outcomes)}"
        lines.append(f"{r.rule:<5} {len(r.cases):>5}  {exp_got:<28} {r.outcome.agree:>3}/{r.outcome.checked:<3} "
                     f"{r.process.agree:>3}/{r.process.checked:<3} {r.diagnosis.agree:>5}/{r.diagnosis.checked:<3} "
                     f"{r.harm.agree:>3}/{r.harm.checked:<3}  {r.statement[:60]}")
    o = report.outcome
    lines.append("")
    lines.append(f"outcome on the suite: tp {o.tp}, fp {o.fp}, tn {o.tn}, fn {o.fn}, unscored {o.unscored}")
    lines.append(f"  false-positive rate {_rate(o.fpr, o.fp, o.fp + o.tn)}   "
                 f"false-negative rate {_rate(o.fnr, o.fn, o.fn + o.tp)}   "
                 f"accuracy {_rate(o.accuracy, o.tp + o.tn, o.tp + o.fp + o.tn + o.fn)}")
    c = report.code_vetoes
    who = "under the adversarial lenient judge, " if report.adversarial else ""
    lines.append(f"code vetoes: {who}code failed {c.failures_caught} of {c.failures} expected failures "
                 f"and {c.successes_vetoed} of {c.successes} expected successes")
    if report.rubrics:
        lines.append(report.rubrics)
    off = [v for v in report.cases if v.status != "scored"]
    for v in off:
        lines.append(f"  {v.status}: {v.case}: {(v.error or '')[:160]}")
    wrong = [v for v in report.cases if v.status == "scored" and not v.agrees]
    if wrong:
        lines.append("disagreements (case: expected outcome/process/diagnosis -> got):")
        for v in wrong:
            got_p = "-" if v.got_process is None else f"{v.got_process:.2f}"
            lines.append(f"  {v.case}: {_tf([v.expected_outcome])}/{v.expected_process}/"
                         f"{','.join(v.expected_diagnosis) or '-'} -> {_tf([v.got_outcome])}/{got_p}/"
                         f"{','.join(v.got_diagnosis) or '-'}" + _harm(v))
    if report.demo_judge:
        lines.append("NOTE: demo judge (random weights): these verdicts are meaningless; only the plumbing is real.")
    return "\n".join(lines)
