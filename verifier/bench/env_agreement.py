"""Agreement of the verifier with the environment's own checker (BrowserGym reward, OSWorld result.txt).

Why: people who run agents on benchmarks with programmatic checkers already hold a second opinion
on every run. `score` / `score-dataset` copy it from the trajectory into each record
(`ScoreRecord.other_verdicts["env_score"]`, never into the result), and this module compares:
Cohen's kappa, FPR / FNR with bootstrap intervals (`metrics.binary_agreement`, environment =
reference), and the list of runs on which the two disagree, which is where to look first.

The environment is a reference, not the truth: its checker tests what the task author wired up
(in a security benchmark 1.0 can mean that an attack worked), so every disagreement is a run to
read, not an error of the verifier. The agent's own claim is compared the same way, for context.
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


class EnvAgreement(BaseModel):
    n_records: int
    n_with_env: int
    n_unscored: int
    outcome: BinaryAgreement | None
    process: BinaryAgreement | None
    agent_claim: BinaryAgreement | None
    disagreements: list[EnvRow]


def env_rows(records: Iterable[ScoreRecord]) -> tuple[list[EnvRow], int, int]:
    """(rows of scored runs with an environment score, number of records, number unscored)."""
    rows, n, unscored = [], 0, 0
    for rec in records:
        n += 1
        env = (rec.other_verdicts or {}).get("env_score")
        if not isinstance(env, dict) or not isinstance(env.get("success"), bool):
            continue
        if rec.status != "scored":
            unscored += 1
            continue
        res = rec.result_dict()
        claim = (rec.other_verdicts or {}).get("agent_claim") or {}
        outcome, process = result_field(res, "outcome_success"), result_field(res, "process_success")
        rows.append(EnvRow(id=rec.id, verifier_outcome=outcome if isinstance(outcome, bool) else None,
                           verifier_process=process if isinstance(process, bool) else None,
                           env_success=env["success"], env_score=float(env.get("score", 0.0)),
                           env_source=str(env.get("source", "")),
                           agent_claim=claim.get("success") if isinstance(claim.get("success"), bool) else None))
    return rows, n, unscored


def env_agreement(records: Iterable[ScoreRecord], *, n_boot: int = DEFAULT_N_BOOT,
                  seed: int = DEFAULT_SEED) -> EnvAgreement:
    rows, n, unscored = env_rows(records)

    def agree(attr: str) -> BinaryAgreement | None:
        pairs = [(getattr(r, attr), r.env_success) for r in rows if getattr(r, attr) is not None]
        if not pairs:
            return None
        return binary_agreement([p for p, _ in pairs], [t for _, t in pairs], n_boot=n_boot, seed=seed)

    return EnvAgreement(n_records=n, n_with_env=len(rows) + unscored, n_unscored=unscored,
                        outcome=agree("verifier_outcome"), process=agree("verifier_process"),
                        agent_claim=agree("agent_claim"),
                        disagreements=[r for r in rows if r.verifier_outcome is not None
                                       and r.verifier_outcome != r.env_success])


def format_env_agreement(report: EnvAgreement, digits: int = 3) -> str:
    head = (f"records {report.n_records}; with an environment score {report.n_with_env} "
            f"({report.n_unscored} unscored by the verifier, left out)")
    lines = [head]
    if report.n_with_env == 0:
        lines.append("no record carries an environment score (BrowserGym cum_reward, OSWorld result.txt): "
                     "nothing to compare")
        return "\n".join(lines)
    lines.append("reference = the environment's checker (positive = success); 95% bootstrap intervals")
    lines.append(f"{'verdict':<22} {'n':>4} {'tp':>3} {'fp':>3} {'fn':>3} {'tn':>3}  {'kappa':<24} {'FPR':<24} FNR")
    for name, agr in (("verifier outcome", report.outcome), ("verifier process", report.process),
                      ("agent's own claim", report.agent_claim)):
        if agr is None:
            lines.append(f"{name:<22} (none)")
            continue
        lines.append(f"{name:<22} {agr.n:>4} {agr.tp:>3} {agr.fp:>3} {agr.fn:>3} {agr.tn:>3}  "
                     f"{agr.kappa.fmt(digits):<24} {agr.fpr.fmt(digits):<24} {agr.fnr.fmt(digits)}")
    lines.append(f"\ndisagreements (verifier outcome vs environment): {len(report.disagreements)}")
    for r in report.disagreements:
        claim = {True: "success", False: "failure", None: "-"}[r.agent_claim]
        lines.append(f"  {r.id}: verifier {'success' if r.verifier_outcome else 'failure'}, environment "
                     f"{r.env_score:g} ({r.env_source}), agent claimed {claim}")
    lines.append("\nAn environment score is not always task success: read each disagreement before "
                 "counting it against either side.")
    return "\n".join(lines)


def as_json(report: EnvAgreement) -> dict[str, Any]:
    return report.model_dump(mode="json")
