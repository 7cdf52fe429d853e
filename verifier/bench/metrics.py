"""Agreement statistics between a verifier and human labels, each with a bootstrap 95% CI.

Why bootstrap: CUAVerifierBench splits have ~100-150 tasks, so a kappa of 0.6 could easily be
0.45 or 0.75; every figure we report carries a percentile interval from a *seeded* resample of
tasks, so two runs of the report print identical numbers.

Point estimates use scikit-learn / SciPy (`confusion_matrix`, `cohen_kappa_score`, `pearsonr`,
`spearmanr`); the bootstrap recomputes the same formulas vectorised over resamples (tests check the
two agree). A ratio whose denominator is zero (e.g. precision with no predicted positives) is NaN,
never 0: an undefined metric is not a bad one.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Annotated

import numpy as np
from pydantic import BaseModel, BeforeValidator

DEFAULT_N_BOOT = 1000
DEFAULT_SEED = 0
BINARY_METRICS = ("accuracy", "precision", "recall", "f1", "fpr", "fnr", "kappa")
CONTINUOUS_METRICS = ("pearson", "spearman", "mae")

#: A float that may be undefined: NaN in memory, null in JSON (and back to NaN when read).
MaybeFloat = Annotated[float, BeforeValidator(lambda v: math.nan if v is None else v)]


class Stat(BaseModel):
    """A point estimate with its percentile bootstrap interval (NaN where undefined)."""

    value: MaybeFloat
    lo: MaybeFloat
    hi: MaybeFloat

    def fmt(self, digits: int = 3) -> str:
        if math.isnan(self.value):
            return "n/a"
        ci = "" if math.isnan(self.lo) else f" [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"
        return f"{self.value:.{digits}f}{ci}"


class BinaryAgreement(BaseModel):
    """Verifier verdict (predicted) vs a human label (truth); positive = success."""

    n: int
    tp: int
    fp: int
    fn: int
    tn: int
    accuracy: Stat
    precision: Stat
    recall: Stat
    f1: Stat
    fpr: Stat
    fnr: Stat
    kappa: Stat


class ContinuousAgreement(BaseModel):
    """Verifier process score vs a human score in [0, 1]."""

    n: int
    pearson: Stat
    spearman: Stat
    mae: Stat


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _from_counts(tp, fp, fn, tn) -> dict[str, np.ndarray]:
    """Every binary metric from confusion counts (scalars or arrays of resamples)."""
    tp, fp, fn, tn = (np.asarray(x, dtype=float) for x in (tp, fp, fn, tn))
    n = tp + fp + fn + tn
    po = _div(tp + tn, n)
    pe = _div((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn), n * n)
    precision, recall = _div(tp, tp + fp), _div(tp, tp + fn)
    return {
        "accuracy": po,
        "precision": precision,
        "recall": recall,
        "f1": _div(2 * tp, 2 * tp + fp + fn),
        "fpr": _div(fp, fp + tn),
        "fnr": _div(fn, fn + tp),
        "kappa": _div(po - pe, 1 - pe),
    }


def metrics_from_counts(tp, fp, fn, tn) -> dict[str, np.ndarray]:
    """Every binary metric from confusion counts (scalars or arrays): the one formula the bench and
    the experiment report (`verifier.experiment.stats`) share."""
    return _from_counts(tp, fp, fn, tn)


def percentile_ci(samples: np.ndarray) -> tuple[float, float]:
    """The 95% percentile interval of the finite bootstrap samples (NaN, NaN when none is)."""
    return _ci(samples)


def _ci(samples: np.ndarray) -> tuple[float, float]:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return math.nan, math.nan
    lo, hi = np.percentile(finite, [2.5, 97.5])
    return float(lo), float(hi)


def _resample_idx(n: int, n_boot: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def _as_bool(values: Sequence[object], name: str) -> np.ndarray:
    if any(v is None for v in values):
        raise ValueError(f"{name} contains None; drop unlabeled / unscored items first")
    return np.asarray([bool(v) for v in values], dtype=bool)


def binary_agreement(pred: Sequence[bool], truth: Sequence[bool], *, n_boot: int = DEFAULT_N_BOOT,
                     seed: int = DEFAULT_SEED) -> BinaryAgreement:
    """Confusion counts and every binary metric (positive = success) with bootstrap CIs."""
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    p, t = _as_bool(pred, "pred"), _as_bool(truth, "truth")
    if p.shape != t.shape or p.size == 0:
        raise ValueError(f"pred and truth must be non-empty and equal length ({p.size} vs {t.size})")
    tn, fp, fn, tp = (int(x) for x in confusion_matrix(t, p, labels=[False, True]).ravel())
    point = _from_counts(tp, fp, fn, tn)
    if len(set(p.tolist()) | set(t.tolist())) > 1:  # sklearn's kappa is undefined on one class
        point["kappa"] = np.asarray(cohen_kappa_score(t, p))
    idx = _resample_idx(p.size, n_boot, seed)
    pb, tb = p[idx], t[idx]
    boot = _from_counts((pb & tb).sum(1), (pb & ~tb).sum(1), (~pb & tb).sum(1), (~pb & ~tb).sum(1))
    stats = {k: Stat(value=float(point[k]), lo=_ci(boot[k])[0], hi=_ci(boot[k])[1])
             for k in BINARY_METRICS}
    return BinaryAgreement(n=int(p.size), tp=tp, fp=fp, fn=fn, tn=tn, **stats)


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xc, yc = x - x.mean(1, keepdims=True), y - y.mean(1, keepdims=True)
    return _div((xc * yc).sum(1), np.sqrt((xc ** 2).sum(1) * (yc ** 2).sum(1)))


def continuous_agreement(pred: Sequence[float], truth: Sequence[float], *, n_boot: int = DEFAULT_N_BOOT,
                         seed: int = DEFAULT_SEED) -> ContinuousAgreement:
    """Pearson, Spearman and mean absolute error of verifier scores vs human scores."""
    from scipy.stats import pearsonr, rankdata, spearmanr

    x, y = np.asarray(pred, dtype=float), np.asarray(truth, dtype=float)
    if x.shape != y.shape or x.size < 2:
        raise ValueError(f"need >= 2 paired scores of equal length ({x.size} vs {y.size})")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("scores contain NaN/inf; drop unscored items first")
    constant = np.ptp(x) == 0 or np.ptp(y) == 0
    pear = math.nan if constant else float(pearsonr(x, y)[0])
    spear = math.nan if constant else float(spearmanr(x, y)[0])
    idx = _resample_idx(x.size, n_boot, seed)
    xb, yb = x[idx], y[idx]
    with np.errstate(invalid="ignore", divide="ignore"):
        boot_p = _pearson_rows(xb, yb)
        boot_s = _pearson_rows(rankdata(xb, axis=1), rankdata(yb, axis=1))
    boot_mae = np.abs(xb - yb).mean(1)
    return ContinuousAgreement(
        n=int(x.size),
        pearson=Stat(value=pear, lo=_ci(boot_p)[0], hi=_ci(boot_p)[1]),
        spearman=Stat(value=spear, lo=_ci(boot_s)[0], hi=_ci(boot_s)[1]),
        mae=Stat(value=float(np.abs(x - y).mean()), lo=_ci(boot_mae)[0], hi=_ci(boot_mae)[1]),
    )


class InterAnnotator(BaseModel):
    """Agreement among human annotators on items labelled by at least two of them."""

    n_items: int
    n_annotators: int
    fleiss_kappa: MaybeFloat
    mean_pairwise_kappa: MaybeFloat  # mean Cohen's kappa over annotator pairs sharing >= min_shared items
    n_pairs: int
    pairwise_percent_agreement: MaybeFloat  # share of agreeing label pairs within items


def fleiss_kappa(item_labels: Sequence[Sequence[object]]) -> float:
    """Fleiss' kappa, allowing a different number (>= 2) of raters per item."""
    items = [list(v) for v in item_labels if len(v) >= 2]
    if not items:
        return math.nan
    cats = sorted({c for v in items for c in v}, key=str)
    counts = np.asarray([[v.count(c) for c in cats] for v in items], dtype=float)
    n_i = counts.sum(1)
    p_i = ((counts ** 2).sum(1) - n_i) / (n_i * (n_i - 1))
    p_j = counts.sum(0) / counts.sum()
    p_bar, p_e = p_i.mean(), float((p_j ** 2).sum())
    return math.nan if p_e == 1 else float((p_bar - p_e) / (1 - p_e))


def inter_annotator(labels: Mapping[str, Mapping[str, object]], *, min_shared: int = 5) -> InterAnnotator:
    """`labels[item][annotator] = label`; items with fewer than two labels are ignored."""
    from sklearn.metrics import cohen_kappa_score

    multi = {item: dict(by) for item, by in labels.items() if len(by) >= 2}
    annotators = sorted({a for by in multi.values() for a in by})
    kappas = []
    for a, b in itertools.combinations(annotators, 2):
        shared = [(by[a], by[b]) for by in multi.values() if a in by and b in by]
        if len(shared) < min_shared:
            continue
        la, lb = zip(*shared)
        if len(set(la) | set(lb)) > 1:
            kappas.append(float(cohen_kappa_score([str(x) for x in la], [str(x) for x in lb])))
    pairs = [(x, y) for by in multi.values() for x, y in itertools.combinations(list(by.values()), 2)]
    return InterAnnotator(
        n_items=len(multi), n_annotators=len(annotators),
        fleiss_kappa=fleiss_kappa([list(by.values()) for by in multi.values()]),
        mean_pairwise_kappa=float(np.mean(kappas)) if kappas else math.nan, n_pairs=len(kappas),
        pairwise_percent_agreement=float(np.mean([x == y for x, y in pairs])) if pairs else math.nan,
    )


def binarize(scores: Sequence[float], threshold: float = 0.8) -> list[bool]:
    """Process score -> pass/fail, the way the UV does it (score >= threshold passes)."""
    return [float(s) >= threshold for s in scores]
