"""Agreement of the verifier with the environment's own checker (BrowserGym reward, OSWorld result.txt).

Why: people who run agents on benchmarks with programmatic checkers already hold a second opinion
on every run. `score` / `score-dataset` copy it from the trajectory into each record
(`ScoreRecord.other_verdicts["env_score"]`, never into the result), and this module compares:
Cohen's kappa, FPR / FNR with bootstrap intervals (`metrics.binary_agreement`, environment =
reference), and the list of runs on which the two disagree, which is where to look first.

The environment is a reference, not the truth: its checker tests what the task author wired up
(in a security benchmark 1.0 can mean that an attack worked), so every disagreement is a run to
read, not an error of the verifier. The agent's own claim is compared the same way, for context.

The agent framework's own LLM judge (browser-use's `judgement`) is a third opinion: it is compared
with the environment where both exist, and the verifier is compared with it (reference = that
judge) on every run that carries one, with its failure reason beside each disagreement.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from ..records import ScoreRecord, result_field
from .metrics import DEFAULT_N_BOOT, DEFAULT_SEED, BinaryAgreement, binary_agreement


class EnvRow(BaseModel):
    """One scored run that carries an environment score."""

    id: str
    verifier_outcome: bool | None
    verifier_process: bool | None
    env_success: bool
    env_score: float
    env_source: str
    agent_claim: bool | None
    framework_judge: bool | None = None


class JudgeRow(BaseModel):
    """One scored run that carries the agent framework's own judge verdict."""

    id: str
    verifier_outcome: bool | None
    verdict: bool
    failure_reason: str | None = None
    impossible_task: bool | None = None
    reached_captcha: bool | None = None
    source: str


class EnvAgreement(BaseModel):
    n_records: int
    n_with_env: int
    n_unscored: int
    outcome: BinaryAgreement | None
    process: BinaryAgreement | None
    agent_claim: BinaryAgreement | None
    disagreements: list[EnvRow]
    #: The framework's own judge against the environment (runs with both).
    framework_judge: BinaryAgreement | None = None
    #: Scored runs carrying a framework judge verdict, and the verifier's outcome against it.
    n_with_framework_judge: int = 0
    verifier_vs_framework_judge: BinaryAgreement | None = None
    framework_disagreements: list[JudgeRow] = []


def env_rows(records: Iterable[ScoreRecord]) -> tuple[list[EnvRow], int, int]:
    """(rows of scored runs with an environment score, number of records, number unscored)."""
    rows, _, n, unscored = _rows(records)
    return rows, n, unscored


def _rows(records: Iterable[ScoreRecord]) -> tuple[list[EnvRow], list[JudgeRow], int, int]:
    rows, judged, n, unscored = [], [], 0, 0
    for rec in records:
        n += 1
        others = rec.other_verdicts or {}
        env, fj = others.get("env_score"), others.get("framework_judge")
        has_env = isinstance(env, dict) and isinstance(env.get("success"), bool)
        fj = fj if isinstance(fj, dict) and isinstance(fj.get("verdict"), bool) else None
        if rec.status != "scored":
            unscored += has_env
            continue
        outcome = _bool(result_field(rec.result_dict(), "outcome_success"))
        if fj is not None:
            judged.append(JudgeRow(id=rec.id, verifier_outcome=outcome, verdict=fj["verdict"],
                                   failure_reason=fj.get("failure_reason"), impossible_task=fj.get("impossible_task"),
                                   reached_captcha=fj.get("reached_captcha"), source=str(fj.get("source", ""))))
        if not has_env or not isinstance(env, dict):
            continue
        claim = others.get("agent_claim") or {}
        rows.append(EnvRow(id=rec.id, verifier_outcome=outcome,
                           verifier_process=_bool(result_field(rec.result_dict(), "process_success")),
                           env_success=env["success"], env_score=float(env.get("score", 0.0)),
                           env_source=str(env.get("source", "")), agent_claim=_bool(claim.get("success")),
                           framework_judge=fj["verdict"] if fj is not None else None))
    return rows, judged, n, unscored


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def env_agreement(records: Iterable[ScoreRecord], *, n_boot: int = DEFAULT_N_BOOT,
                  seed: int = DEFAULT_SEED) -> EnvAgreement:
    rows, judged, n, unscored = _rows(records)

    def compare(pairs: list[tuple[bool | None, bool]]) -> BinaryAgreement | None:
        known = [(p, t) for p, t in pairs if p is not None]
        if not known:
            return None
        return binary_agreement([p for p, _ in known], [t for _, t in known], n_boot=n_boot, seed=seed)

    def agree(attr: str) -> BinaryAgreement | None:
        return compare([(getattr(r, attr), r.env_success) for r in rows])

    return EnvAgreement(n_records=n, n_with_env=len(rows) + unscored, n_unscored=unscored,
                        outcome=agree("verifier_outcome"), process=agree("verifier_process"),
                        agent_claim=agree("agent_claim"),
                        disagreements=[r for r in rows if r.verifier_outcome is not None
                                       and r.verifier_outcome != r.env_success],
                        framework_judge=agree("framework_judge"), n_with_framework_judge=len(judged),
                        verifier_vs_framework_judge=compare([(r.verifier_outcome, r.verdict) for r in judged]),
                        framework_disagreements=[r for r in judged if r.verifier_outcome is not None
                                                 and r.verifier_outcome != r.verdict])


def format_env_agreement(report: EnvAgreement, digits: int = 3) -> str:
    head = (f"records {report.n_records}; with an environment score {report.n_with_env} "
            f"({report.n_unscored} unscored by the verifier, left out)")
    lines = [head]
    if report.n_with_env == 0:
        lines.append("no record carries an environment score (BrowserGym cum_reward, OSWorld result.txt): "
                     "nothing to compare")
    else:
        lines.append("reference = the environment's checker (positive = success); 95% bootstrap intervals")
        lines.append(_TABLE_HEAD)
        for name, agr in (("verifier outcome", report.outcome), ("verifier process", report.process),
                          ("agent's own claim", report.agent_claim), ("framework's judge", report.framework_judge)):
            lines.append(_table_row(name, agr, digits))
        lines.append(f"\ndisagreements (verifier outcome vs environment): {len(report.disagreements)}")
        for r in report.disagreements:
            claim = {True: "success", False: "failure", None: "-"}[r.agent_claim]
            lines.append(f"  {r.id}: verifier {'success' if r.verifier_outcome else 'failure'}, environment "
                         f"{r.env_score:g} ({r.env_source}), agent claimed {claim}")
    if report.n_with_framework_judge:
        lines.append(f"\nwith the agent framework's own judge verdict {report.n_with_framework_judge} "
                     "(browser-use judgement; reference = that judge)")
        lines.append(_TABLE_HEAD)
        lines.append(_table_row("verifier outcome", report.verifier_vs_framework_judge, digits))
        lines.append(f"disagreements (verifier outcome vs framework judge): {len(report.framework_disagreements)}")
        for j in report.framework_disagreements:
            flags = [name for name, on in (("impossible task", j.impossible_task),
                                           ("reached a captcha", j.reached_captcha)) if on]
            why = f", failure reason: {j.failure_reason[:200]}" if j.failure_reason else ""
            lines.append(f"  {j.id}: verifier {'success' if j.verifier_outcome else 'failure'}, framework judge "
                         f"{'success' if j.verdict else 'failure'}{why}"
                         + (f" ({', '.join(flags)})" if flags else ""))
    if report.n_with_env:
        lines.append("\nAn environment score is not always task success: read each disagreement before "
                     "counting it against either side.")
    return "\n".join(lines)


_TABLE_HEAD = f"{'verdict':<22} {'n':>4} {'tp':>3} {'fp':>3} {'fn':>3} {'tn':>3}  {'kappa':<24} {'FPR':<24} FNR"


def _table_row(name: str, agr: BinaryAgreement | None, digits: int) -> str:
    if agr is None:
        return f"{name:<22} (none)"
    return (f"{name:<22} {agr.n:>4} {agr.tp:>3} {agr.fp:>3} {agr.fn:>3} {agr.tn:>3}  "
            f"{agr.kappa.fmt(digits):<24} {agr.fpr.fmt(digits):<24} {agr.fnr.fmt(digits)}")


def as_json(report: EnvAgreement) -> dict[str, Any]:
    return report.model_dump(mode="json")
