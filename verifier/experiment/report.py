"""`experiment report DIR`: the run folder turned into per-arm agreement with its noise floor,
paired differences against the baseline, a decision per arm, the flips and the cost.

Why read only DIR: the items' labels are stored there (`items.json`), and every verdict is in the
arms' logs, so a report can be recomputed anywhere, any number of times, with no judge and no
dataset, and gives the same numbers (the bootstrap is seeded). The statistics live in `stats`.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from ..bench.metrics import MaybeFloat, Stat
from ..records import ResultWriter, result_field
from .runner import RUNS_FILE, RunLine, log_path, read_items, read_meta
from .stats import Decision, Flip, TargetStats, arm_stats, decide, flips, paired_deltas

Target = Literal["outcome", "process"]
FIELDS: dict[Target, str] = {"outcome": "outcome_success", "process": "process_success"}


class Cost(BaseModel):
    """What one verification costs this arm on its own (shared calls counted as if sent)."""

    verifications: int = 0
    calls: MaybeFloat = math.nan
    prompt_tokens: MaybeFloat = math.nan
    completion_tokens: MaybeFloat = math.nan
    judge_latency_s: MaybeFloat = math.nan
    """Sum of its calls' latencies: what the arm waits for alone, sharing aside."""
    wall_s: MaybeFloat = math.nan
    """Measured wall time of a verification in this experiment (shared calls made it shorter)."""
    calls_sent: int = 0
    calls_shared: int = 0


class ArmIdentity(BaseModel):
    """What an arm is (by content: `fingerprint`), as the report and the ledger name it."""

    name: str
    baseline: bool
    fingerprint: str
    replaced: dict[str, str] = Field(default_factory=dict)
    config_overrides: dict = Field(default_factory=dict)
    judge_model: str | None = None


class ArmReport(ArmIdentity):
    targets: dict[str, TargetStats] = Field(default_factory=dict)
    deltas: dict[str, dict[str, Stat]] = Field(default_factory=dict)
    decision: Decision | None = None
    flips: dict[str, list[Flip]] = Field(default_factory=dict)
    cost: Cost = Field(default_factory=Cost)


class ExperimentReport(BaseModel):
    name: str
    repeats: int
    items: int
    n_boot: int
    seed: int
    calls_saved: int
    arms: list[ArmReport]
    item_sources: dict[str, str] = Field(default_factory=dict)
    pages: dict[str, dict[str, list[str]]] = Field(default_factory=dict)
    """arm -> item id -> its rollout page per repeat (relative to DIR), when built."""


def verdict_matrix(out: Path, arm: str, repeats: int, ids: list[str], field: str) -> np.ndarray:
    """(R, n): 1.0 / 0.0 per scored verdict, NaN where unscored or not yet run."""
    v = np.full((repeats, len(ids)), np.nan)
    pos = {i: k for k, i in enumerate(ids)}
    for r in range(repeats):
        for rec in ResultWriter(log_path(out, arm, r)).records():
            value = result_field(rec.result, field) if rec.status == "scored" else None
            if rec.id in pos and value is not None:
                v[r, pos[rec.id]] = float(bool(value))
    return v


def _cost(out: Path, arm: str, repeats: int) -> Cost:
    rows = []
    for r in range(repeats):
        for rec in ResultWriter(log_path(out, arm, r)).records():
            usage = result_field(rec.result, "usage")
            if rec.status == "scored" and isinstance(usage, dict):
                rows.append((usage.get("calls", 0), usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0),
                             usage.get("latency_s", 0.0), rec.duration_s or 0.0))
    if not rows:
        return Cost()
    m = np.asarray(rows, dtype=float).mean(0)
    return Cost(verifications=len(rows), calls=m[0], prompt_tokens=m[1], completion_tokens=m[2],
                judge_latency_s=m[3], wall_s=m[4])


def _runs(out: Path) -> list[RunLine]:
    path = out / RUNS_FILE
    if not path.exists():
        return []
    return [RunLine.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build_report(out: Path, *, n_boot: int = 1000, seed: int = 0) -> ExperimentReport:
    meta, labels = read_meta(out), read_items(out)
    runs = _runs(out)
    arms = []
    base_name = next(a.name for a in meta.arms if a.baseline)
    mats: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, list[str]]] = {}
    for target, field in FIELDS.items():
        keep = [lab for lab in labels if getattr(lab, target) is not None]
        if not keep:
            continue
        ids = [lab.id for lab in keep]
        t = np.asarray([bool(getattr(lab, target)) for lab in keep])
        for a in meta.arms:
            mats[(a.name, target)] = (verdict_matrix(out, a.name, meta.repeats, ids, field), t, ids)
    for a in meta.arms:
        rep = ArmReport(name=a.name, baseline=a.baseline, fingerprint=a.fingerprint, replaced=a.replaced,
                        config_overrides=a.config_overrides, judge_model=a.judge.get("model"))
        for target in FIELDS:
            if (a.name, target) not in mats:
                continue
            v, t, ids = mats[(a.name, target)]
            rep.targets[target] = arm_stats(v, t, n_boot=n_boot, seed=seed)
            if not a.baseline:
                b = mats[(base_name, target)][0]
                rep.deltas[target] = paired_deltas(v, b, t, n_boot=n_boot, seed=seed)
                rep.flips[target] = flips(ids, v, b, t)
        if not a.baseline and "outcome" in rep.deltas:
            base_stats = arm_stats(mats[(base_name, "outcome")][0], mats[(base_name, "outcome")][1],
                                   n_boot=n_boot, seed=seed)
            rep.decision = decide(rep.deltas["outcome"], base_stats)
        rep.cost = _cost(out, a.name, meta.repeats)
        rep.cost.calls_sent = sum(r.arms[a.name].calls_sent for r in runs if a.name in r.arms)
        rep.cost.calls_shared = sum(r.arms[a.name].calls_shared for r in runs if a.name in r.arms)
        arms.append(rep)
    return ExperimentReport(name=meta.name, repeats=meta.repeats, items=len(labels), n_boot=n_boot, seed=seed,
                            calls_saved=sum(r.calls_saved for r in runs), arms=arms,
                            item_sources={lab.id: lab.source for lab in labels})


def _stat(s: Stat | None) -> str:
    return "n/a" if s is None else s.fmt()


def format_report(rep: ExperimentReport) -> str:
    lines = [(f"experiment {rep.name}: {len(rep.arms)} arms, R = {rep.repeats} repeats, {rep.items} items "
              f"(intervals: 95% bootstrap over items and repeats, {rep.n_boot} resamples, seed {rep.seed})"), ""]
    for target in FIELDS:
        if not any(target in a.targets for a in rep.arms):
            continue
        lines.append(f"{target}: mean over repeats [95% CI]; spread = max - min over repeats")
        lines.append(f"  {'arm':<20} {'n':>4} {'kappa':>24} {'FPR':>24} {'FNR':>24} {'accuracy':>24} "
                     f"{'kappa spread':>12} {'FPR spread':>10} {'unstable':>8}")
        for a in rep.arms:
            s = a.targets.get(target)
            if s is None:
                continue
            m = s.metrics
            lines.append(f"  {a.name:<20} {s.n:>4} {_stat(m['kappa']):>24} {_stat(m['fpr']):>24} "
                         f"{_stat(m['fnr']):>24} {_stat(m['accuracy']):>24} {s.spread['kappa'].range:>12.3f} "
                         f"{s.spread['fpr'].range:>10.3f} {s.unstable:>8.2f}")
        lines.append("")
    lines.append("paired differences against the baseline (same items, same repeat draws):")
    for a in rep.arms:
        for name, d in a.deltas.items():
            lines.append(f"  {a.name:<20} {name:<8} delta kappa {_stat(d['kappa'])}   delta FPR {_stat(d['fpr'])}")
    lines.append("")
    lines.append("decisions (accept only when delta kappa's interval is above 0 and FPR did not rise beyond "
                 "the baseline's run-to-run FPR spread):")
    for a in rep.arms:
        if a.decision is not None:
            lines.append(f"  {a.name:<20} {a.decision.verdict.upper():<13} {a.decision.reason}")
    lines.append("")
    for a in rep.arms:
        for f in a.flips.get("outcome", []):
            lines.append(f"  flip {a.name}: {f.id} human={'pass' if f.label else 'fail'} baseline {f.baseline_votes} "
                         f"-> arm {f.arm_votes} ({f.effect})")
    lines.append("")
    lines.append(f"  {'cost per verification':<22} {'calls':>7} {'prompt tok':>11} {'compl. tok':>11} "
                 f"{'judge s':>8} {'wall s':>8} {'sent':>7} {'shared':>7}")
    for a in rep.arms:
        c = a.cost
        lines.append(f"  {a.name:<22} {c.calls:>7.1f} {c.prompt_tokens:>11.0f} {c.completion_tokens:>11.0f} "
                     f"{c.judge_latency_s:>8.2f} {c.wall_s:>8.2f} {c.calls_sent:>7} {c.calls_shared:>7}")
    lines.append(f"judge calls saved by sharing unchanged stages between arms: {rep.calls_saved}")
    return "\n".join(lines)

