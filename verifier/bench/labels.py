"""Human labels, verifier verdicts, and the agreement table that compares them.

Two label sources are always reported side by side, because they answer different questions:
- ``final``: the adjudicated labels, settled *after* annotators saw the reference verifier's
  verdict ("UV-informed"); they flatter whichever verifier the annotators were shown.
- ``uv_blind``: the majority outcome vote / median process score given *before* seeing any
  verifier; the stricter reference for a new verifier.

A verdict whose verifier failed (``None``) is left out of that row's metrics and counted in
``n_unscored``: a judge outage must never read as "the verifier said fail".
"""
from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from .metrics import (
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    BinaryAgreement,
    ContinuousAgreement,
    binarize,
    binary_agreement,
    continuous_agreement,
)

LabelSource = Literal["final", "uv_blind"]
LABEL_SOURCES: tuple[LabelSource, ...] = ("final", "uv_blind")
LABEL_SOURCE_TITLES = {"final": "final adjudicated (UV-informed)", "uv_blind": "UV-blind humans"}


class HumanLabels(BaseModel):
    """Task-level human judgement (any field may be missing for a task)."""

    task_id: str
    final_outcome: bool | None = None
    final_process: bool | None = None
    blind_majority_outcome: bool | None = None
    blind_median_process_score: float | None = None


class Verdict(BaseModel):
    """One verifier's verdict on one task; both fields None when the verifier could not score it."""

    task_id: str
    verifier: str
    outcome_success: bool | None = None
    process_score: float | None = None


class AgreementRow(BaseModel):
    """One line of the agreement table."""

    verifier: str
    target: Literal["outcome", "process", "process_score"]
    label_source: LabelSource
    n_unscored: int = 0
    binary: BinaryAgreement | None = None
    continuous: ContinuousAgreement | None = None


def _human_value(h: HumanLabels, target: str, source: LabelSource, threshold: float):
    if target == "outcome":
        return h.final_outcome if source == "final" else h.blind_majority_outcome
    if target == "process":
        if source == "final":
            return h.final_process
        s = h.blind_median_process_score
        return None if s is None else s >= threshold
    return h.blind_median_process_score if source == "uv_blind" else None


def agreement_table(verdicts: Iterable[Verdict], labels: Iterable[HumanLabels], *, threshold: float = 0.8,
                    n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> list[AgreementRow]:
    """Every (verifier x target x label source) comparison on the tasks both sides have."""
    by_task = {h.task_id: h for h in labels}
    per_verifier: dict[str, list[Verdict]] = {}
    for v in verdicts:
        if v.task_id in by_task:
            per_verifier.setdefault(v.verifier, []).append(v)
    rows: list[AgreementRow] = []
    for name, vs in per_verifier.items():
        has_process = any(v.process_score is not None for v in vs)  # verdict-only verifiers have none
        for target in ("outcome", "process", "process_score") if has_process else ("outcome",):
            for source in LABEL_SOURCES:
                pairs, unscored = [], 0
                for v in vs:
                    truth = _human_value(by_task[v.task_id], target, source, threshold)
                    pred = v.outcome_success if target == "outcome" else v.process_score
                    if truth is None:
                        continue
                    if pred is None:
                        unscored += 1
                        continue
                    pairs.append((pred, truth))
                if not pairs and not unscored:
                    continue
                row = AgreementRow(verifier=name, target=target, label_source=source, n_unscored=unscored)
                if pairs:
                    pred, truth = (list(x) for x in zip(*pairs))
                    if target == "process_score":
                        if len(pairs) >= 2:
                            row.continuous = continuous_agreement(pred, truth, n_boot=n_boot, seed=seed)
                    else:
                        if target == "process":
                            pred = binarize(pred, threshold)
                        row.binary = binary_agreement(pred, truth, n_boot=n_boot, seed=seed)
                rows.append(row)
    return rows


# ---- the shared CSV of stored verdicts and labels ----------------------------------------------

_VERIFIER_PREFIXES = {"dataset_uv": "uv (dataset, stored)", "fresh_uv": "uv (fresh re-run)"}


def _bool(cell: str | None) -> bool | None:
    if cell is None or cell.strip() == "":
        return None
    low = cell.strip().lower()
    if low in ("true", "1", "1.0", "yes"):
        return True
    if low in ("false", "0", "0.0", "no"):
        return False
    raise ValueError(f"not a boolean: {cell!r}")


def _float(cell: str | None) -> float | None:
    return None if cell is None or cell.strip() == "" else float(cell)


def read_labels_csv(path: str | Path) -> tuple[list[HumanLabels], list[Verdict]]:
    """Read `om2w_labels_and_uv_verdicts.csv` (one row per task) into labels and verdicts."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or "task_id" not in rows[0]:
        raise ValueError(f"{path}: expected a CSV with a task_id column")
    labels, verdicts = [], []
    for r in rows:
        labels.append(HumanLabels(
            task_id=r["task_id"], final_outcome=_bool(r.get("final_human_outcome_label")),
            final_process=_bool(r.get("final_human_process_label")),
            blind_majority_outcome=_bool(r.get("majority_human_outcome_vote_uv_blind")),
            blind_median_process_score=_float(r.get("median_human_process_score_uv_blind"))))
        for prefix, name in _VERIFIER_PREFIXES.items():
            if f"{prefix}_outcome_success" in r:
                verdicts.append(Verdict(task_id=r["task_id"], verifier=name,
                                        outcome_success=_bool(r[f"{prefix}_outcome_success"]),
                                        process_score=_float(r.get(f"{prefix}_rubric_score"))))
    return labels, verdicts


def format_table(rows: Sequence[AgreementRow], digits: int = 3) -> str:
    """Plain-text agreement table (for the terminal); the report has the full markdown version."""
    head = (f"{'verifier':<24} {'target':<8} {'labels':<9} {'n':>4} {'tp':>3} {'fp':>3} {'fn':>3} {'tn':>3} "
            f"{'acc':>6} {'kappa':>6} {'FPR':>6} {'FNR':>6} {'F1':>6}  kappa 95% CI")
    lines = [head, "-" * len(head)]
    for r in rows:
        if r.binary is not None:
            b = r.binary
            lines.append(
                f"{r.verifier:<24} {r.target:<8} {r.label_source:<9} {b.n:>4} {b.tp:>3} {b.fp:>3} {b.fn:>3} "
                f"{b.tn:>3} {b.accuracy.value:>6.{digits}f} {b.kappa.value:>6.{digits}f} "
                f"{b.fpr.value:>6.{digits}f} {b.fnr.value:>6.{digits}f} {b.f1.value:>6.{digits}f}  "
                f"[{b.kappa.lo:.{digits}f}, {b.kappa.hi:.{digits}f}]")
    cont = [r for r in rows if r.continuous is not None]
    if cont:
        lines += ["", f"{'verifier':<24} {'process score vs median UV-blind human score':<44} n",
                  "-" * 72]
        for r in cont:
            c = r.continuous
            lines.append(f"{r.verifier:<24} pearson {c.pearson.fmt(digits)}  spearman {c.spearman.fmt(digits)}  "
                         f"MAE {c.mae.fmt(digits)}  {c.n}")
    unscored = [r for r in rows if r.n_unscored]
    for r in unscored:
        lines.append(f"note: {r.verifier} left {r.n_unscored} task(s) unscored for {r.target}/{r.label_source}")
    return "\n".join(lines)
