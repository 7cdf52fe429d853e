"""The ledger across experiments: one line per completed experiment, and the accepted iterations.

Why a ledger: the paper's verifier was 32 kept-or-rolled-back experiments, and its Figures 1, 13
and 14 plot kappa and FPR across the *accepted* ones. A single experiment's report says whether
one change helped; the ledger shows whether the series of changes is still climbing, and where a
change that looked good was later undone. Lines are appended by `experiment run` when every
verification of the folder is scored (by default to ``ledger.jsonl`` beside the folder, so
``runs/exp1``, ``runs/exp2``... share ``runs/ledger.jsonl``); a rerun of a finished folder adds nothing.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

from pydantic import BaseModel

from ..bench.metrics import MaybeFloat
from .report import ArmIdentity, ExperimentReport

LEDGER_FILE = "ledger.jsonl"


class LedgerArm(ArmIdentity):
    kappa: MaybeFloat = math.nan
    fpr: MaybeFloat = math.nan
    process_kappa: MaybeFloat = math.nan
    decision: str | None = None
    reason: str = ""
    delta_kappa: MaybeFloat = math.nan


class LedgerLine(BaseModel):
    at: float
    name: str
    folder: str
    repeats: int
    items: int
    arms: list[LedgerArm]


class Iteration(BaseModel):
    """One point of the accepted path: the verifier in use after experiment `experiment`."""

    experiment: str
    arm: str
    kappa: MaybeFloat
    fpr: MaybeFloat


def line_of(rep: ExperimentReport, folder: str) -> LedgerLine:
    arms = []
    for a in rep.arms:
        out = a.targets.get("outcome")
        proc = a.targets.get("process")
        arms.append(LedgerArm(
            **a.model_dump(include=set(ArmIdentity.model_fields)),
            kappa=out.metrics["kappa"].value if out else math.nan, fpr=out.metrics["fpr"].value if out else math.nan,
            process_kappa=proc.metrics["kappa"].value if proc else math.nan,
            decision=a.decision.verdict if a.decision else None, reason=a.decision.reason if a.decision else "",
            delta_kappa=a.decision.delta_kappa.value if a.decision else math.nan))
    return LedgerLine(at=time.time(), name=rep.name, folder=folder, repeats=rep.repeats, items=rep.items, arms=arms)


def read_ledger(path: Path) -> list[LedgerLine]:
    if not path.is_file():
        return []
    return [LedgerLine.model_validate_json(s) for s in path.read_text(encoding="utf-8").splitlines() if s.strip()]


def append_line(path: Path, line: LedgerLine) -> bool:
    """Append unless the ledger already holds this folder with the same arms (False then)."""
    key = (line.folder, [a.fingerprint for a in line.arms])
    if any((old.folder, [a.fingerprint for a in old.arms]) == key for old in read_ledger(path)):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line.model_dump_json() + "\n")
    return True


def accepted_path(lines: list[LedgerLine]) -> list[Iteration]:
    """The first experiment's baseline, then per experiment its best accepted arm (largest delta
    kappa), in ledger order; experiments that accepted nothing add no point."""
    path: list[Iteration] = []
    for line in lines:
        if not path:
            base = next((a for a in line.arms if a.baseline), None)
            if base is not None:
                path.append(Iteration(experiment=line.name, arm=base.name, kappa=base.kappa, fpr=base.fpr))
        accepted = [a for a in line.arms if a.decision == "accept"]
        if accepted:
            best = max(accepted, key=lambda a: -math.inf if math.isnan(a.delta_kappa) else a.delta_kappa)
            path.append(Iteration(experiment=line.name, arm=best.name, kappa=best.kappa, fpr=best.fpr))
    return path


def format_ledger(lines: list[LedgerLine]) -> str:
    rows = [f"{len(lines)} experiment(s) in the ledger; the accepted path (outcome kappa, FPR):"]
    for i, it in enumerate(accepted_path(lines)):
        rows.append(f"  {i:>3}  {it.experiment:<28} {it.arm:<24} kappa {it.kappa:.3f}  FPR {it.fpr:.3f}")
    rows.append("decisions:")
    for line in lines:
        for a in line.arms:
            if a.decision:
                rows.append(f"  {line.name:<28} {a.name:<24} {a.decision:<13} {a.reason}")
    return "\n".join(rows)


def write_ledger_html(lines: list[LedgerLine], path: Path) -> Path:
    from ..viewer import Figure, Section, Table, render_report
    from ..viewer.svg import lines as line_chart

    it = accepted_path(lines)
    chart = line_chart({"outcome kappa": [i.kappa for i in it], "FPR": [i.fpr for i in it]},
                       "Accepted iterations", xlabels=[str(k) for k in range(len(it))])
    table = Table.of(["iteration", "experiment", "arm", "kappa", "FPR"],
                     [[k, i.experiment, i.arm, i.kappa, i.fpr] for k, i in enumerate(it)])
    decisions = Table.of(["experiment", "arm", "decision", "delta kappa", "reason"],
                         [[line.name, a.name, a.decision, a.delta_kappa, a.reason]
                          for line in lines for a in line.arms if a.decision])
    sections = [Section(title="Accepted iterations", figures=[Figure(svg=str(chart))], tables=[table]),
                Section(title="Every decision", tables=[decisions])]
    return render_report("Experiment ledger", sections, path)
