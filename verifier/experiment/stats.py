"""The experiment's statistics, pure (arrays in, models out): per-arm agreement with its noise
floor, paired differences against the baseline, the decision rule, and the flips.

The noise model, in plain words (docs/experiment.md says more):
- an arm's figure is the mean over its R repeats of the figure of each repeat (kappa, FPR, ...);
- its interval comes from a two-level bootstrap: resample the items (the labelled set is a sample
  of tasks) and, inside each resample, the repeats (the judge is a sample of its own runs), so the
  interval is wide when either the set is small or the judge is noisy;
- a paired difference (arm - baseline) is computed on the *same* resampled items and the *same*
  repeat draws for both arms (repeat k of two arms shares its unchanged calls, so it is paired),
  which removes the item-to-item variation the two arms have in common;
- the run-to-run spread is what the figure does between repeats with nothing changed (max - min
  over repeats); the baseline's FPR spread is the noise an FPR rise must exceed to count.

Decision (the paper's FPR-constrained commit): *reject* when the FPR rises by more than the
baseline's run-to-run FPR spread (whatever kappa did), or when delta-kappa's interval lies below 0;
*accept* only when delta-kappa's interval lies above 0; else *inconclusive*. Every decision says why.

Verdicts are given as float arrays of shape (R, n): 1.0 pass, 0.0 fail, NaN unscored; an unscored
verification is left out of that repeat's figures, never counted as a fail.
"""
from __future__ import annotations

import math
import warnings
from typing import Literal

import numpy as np
from pydantic import BaseModel

from ..bench.metrics import BINARY_METRICS, MaybeFloat, Stat, metrics_from_counts, percentile_ci

DECISION_METRICS = ("kappa", "fpr", "fnr", "accuracy")
Verdict = Literal["accept", "reject", "inconclusive"]


class Spread(BaseModel):
    """A figure across the R repeats of one arm (the noise floor)."""

    per_repeat: list[MaybeFloat]
    range: MaybeFloat
    sd: MaybeFloat


class TargetStats(BaseModel):
    """One arm, one target (outcome or process): mean-over-repeats figures with intervals."""

    n: int
    """Labelled items with at least one scored repeat."""
    unscored: int
    """Verifications (item x repeat) without a verdict."""
    metrics: dict[str, Stat]
    spread: dict[str, Spread]
    unstable: MaybeFloat
    """Share of items whose verdict differed between repeats (NaN with R = 1)."""


class Decision(BaseModel):
    verdict: Verdict
    reason: str
    delta_kappa: Stat
    delta_fpr: Stat
    fpr_noise: MaybeFloat


class Flip(BaseModel):
    """An item whose majority verdict differs between the baseline and the arm."""

    id: str
    label: bool
    baseline_votes: str
    arm_votes: str
    baseline: bool
    arm: bool
    effect: Literal["fixed", "broke"]


def _metric_table(v: np.ndarray, t: np.ndarray) -> dict[str, np.ndarray]:
    """Metrics over the last axis of `v` (..., n) (NaN = unscored) against truth `t` (..., n)."""
    scored = ~np.isnan(v)
    p = np.where(scored, v, 0) > 0.5
    tp = (p & t & scored).sum(-1)
    fp = (p & ~t & scored).sum(-1)
    fn = (~p & t & scored).sum(-1)
    tn = (~p & ~t & scored).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return metrics_from_counts(tp, fp, fn, tn)


def _mean_over_repeats(x: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():  # a metric undefined in every repeat stays NaN, silently
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=-1)


def _draws(n: int, repeats: int, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(n_boot, n)), rng.integers(0, repeats, size=(n_boot, repeats))


def _boot(v: np.ndarray, t: np.ndarray, items: np.ndarray, reps: np.ndarray) -> dict[str, np.ndarray]:
    """Each metric per bootstrap draw (B,): resampled items, resampled repeats, mean over repeats."""
    vb = v[reps[:, :, None], items[:, None, :]]  # (B, R, n)
    tb = t[items][:, None, :]  # (B, 1, n)
    table = _metric_table(vb, np.broadcast_to(tb, vb.shape))
    return {k: _mean_over_repeats(x) for k, x in table.items()}


def check_shapes(v: np.ndarray, t: np.ndarray) -> None:
    if v.ndim != 2 or t.ndim != 1 or v.shape[1] != t.shape[0]:
        raise ValueError(f"verdicts must be (R, n) and labels (n,), got {v.shape} and {t.shape}")
    if v.shape[0] < 1 or v.shape[1] < 1:
        raise ValueError("need at least one repeat and one item")


def arm_stats(v: np.ndarray, t: np.ndarray, *, n_boot: int = 1000, seed: int = 0) -> TargetStats:
    """One arm's figures: each metric's mean over repeats, its two-level bootstrap interval and its
    run-to-run spread, plus the share of items that changed verdict between repeats."""
    v, t = np.asarray(v, dtype=float), np.asarray(t, dtype=bool)
    check_shapes(v, t)
    per = _metric_table(v, np.broadcast_to(t, v.shape))  # metric -> (R,)
    items, reps = _draws(t.size, v.shape[0], n_boot, seed)
    boot = _boot(v, t, items, reps)
    metrics, spread = {}, {}
    for k in BINARY_METRICS:
        vals = per[k]
        lo, hi = percentile_ci(boot[k])
        finite = vals[np.isfinite(vals)]
        metrics[k] = Stat(value=float(finite.mean()) if finite.size else math.nan, lo=lo, hi=hi)
        spread[k] = Spread(per_repeat=[float(x) for x in vals],
                           range=float(np.ptp(finite)) if finite.size else math.nan,
                           sd=float(finite.std(ddof=1)) if finite.size > 1 else math.nan)
    scored = ~np.isnan(v)
    both = scored.sum(0) >= 2
    differs = both & (np.nanmax(np.where(scored, v, -1), 0) != np.nanmin(np.where(scored, v, 2), 0))
    unstable = float(differs.sum() / both.sum()) if both.any() and v.shape[0] > 1 else math.nan
    return TargetStats(n=int(scored.any(0).sum()), unscored=int((~scored).sum()), metrics=metrics,
                       spread=spread, unstable=unstable)


def paired_deltas(arm: np.ndarray, base: np.ndarray, t: np.ndarray, *, n_boot: int = 1000,
                  seed: int = 0) -> dict[str, Stat]:
    """arm - baseline for each metric, on the same resampled items and repeat draws."""
    a, b, t = np.asarray(arm, dtype=float), np.asarray(base, dtype=float), np.asarray(t, dtype=bool)
    check_shapes(a, t)
    check_shapes(b, t)
    if a.shape != b.shape:
        raise ValueError(f"paired arms need the same repeats and items, got {a.shape} and {b.shape}")
    items, reps = _draws(t.size, a.shape[0], n_boot, seed)
    ba, bb = _boot(a, t, items, reps), _boot(b, t, items, reps)
    pa = _metric_table(a, np.broadcast_to(t, a.shape))
    pb = _metric_table(b, np.broadcast_to(t, b.shape))
    out = {}
    for k in BINARY_METRICS:
        point = _mean_over_repeats(pa[k]) - _mean_over_repeats(pb[k])
        lo, hi = percentile_ci(ba[k] - bb[k])
        out[k] = Stat(value=float(point), lo=lo, hi=hi)
    return out


def decide(deltas: dict[str, Stat], base: TargetStats) -> Decision:
    """The FPR-constrained commit rule (module docstring)."""
    dk, df = deltas["kappa"], deltas["fpr"]
    noise = base.spread["fpr"].range
    noise = 0.0 if math.isnan(noise) else noise

    def made(verdict: Verdict, reason: str) -> Decision:
        return Decision(verdict=verdict, reason=reason, delta_kappa=dk, delta_fpr=df, fpr_noise=noise)

    if not math.isnan(df.value) and df.value > noise + 1e-12:
        return made("reject", f"FPR rose by {df.value:+.3f}, beyond the baseline's run-to-run FPR spread "
                              f"({noise:.3f})" + (" although kappa rose" if dk.value > 0 else ""))
    if math.isnan(dk.value) or math.isnan(dk.lo):
        return made("inconclusive", "delta kappa is undefined (one class only among labels or verdicts)")
    if dk.lo > 0:
        return made("accept", f"delta kappa {dk.fmt()} lies above 0 and FPR did not rise beyond the noise "
                              f"({df.value:+.3f} <= {noise:.3f})")
    if dk.hi < 0:
        return made("reject", f"delta kappa {dk.fmt()} lies below 0")
    return made("inconclusive", f"delta kappa's interval {dk.fmt()} includes 0: not distinguishable from "
                                "run-to-run and item noise (more items or repeats narrow it)")


def majority(v: np.ndarray) -> np.ndarray:
    """Per item: 1.0 / 0.0 by strict majority of the scored repeats, NaN on a tie or none scored."""
    v = np.asarray(v, dtype=float)
    scored = (~np.isnan(v)).sum(0)
    passes = np.nansum(v, 0)
    out = np.full(v.shape[1], np.nan)
    out[(scored > 0) & (2 * passes > scored)] = 1.0
    out[(scored > 0) & (2 * passes < scored)] = 0.0
    return out


def votes(column: np.ndarray) -> str:
    scored = column[~np.isnan(column)]
    return f"{int(scored.sum())}/{scored.size} pass"


def flips(ids: list[str], arm: np.ndarray, base: np.ndarray, t: np.ndarray) -> list[Flip]:
    """Items whose majority verdict changed (ties and unscored items are no flip), fixed ones first."""
    a, b = np.asarray(arm, dtype=float), np.asarray(base, dtype=float)
    ma, mb = majority(a), majority(b)
    out = []
    for i, item in enumerate(ids):
        if np.isnan(ma[i]) or np.isnan(mb[i]) or ma[i] == mb[i]:
            continue
        label = bool(t[i])
        out.append(Flip(id=item, label=label, baseline_votes=votes(b[:, i]), arm_votes=votes(a[:, i]),
                        baseline=bool(mb[i]), arm=bool(ma[i]), effect="fixed" if bool(ma[i]) == label else "broke"))
    return sorted(out, key=lambda f: (f.effect != "fixed", f.id))
