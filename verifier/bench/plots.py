"""PNG figures for the report (matplotlib, Agg backend: works headless and in CI).

Each function returns the written path, or None when there is nothing to draw (e.g. no verifier
produced process scores), so the report simply leaves that figure out.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .labels import LABEL_SOURCE_TITLES, AgreementRow, HumanLabels, Verdict


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def plot_confusions(rows: Sequence[AgreementRow], path: Path) -> Path | None:
    """One 2x2 matrix per (verifier, target, label source): outcome and binarized process."""
    cells = [r for r in rows if r.target in ("outcome", "process") and r.binary is not None]
    if not cells:
        return None
    plt = _plt()
    cols = min(4, len(cells))
    nrows = (len(cells) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(3.2 * cols, 3.0 * nrows), squeeze=False)
    for ax in axes.flat[len(cells):]:
        ax.axis("off")
    for ax, r in zip(axes.flat, cells):
        b = r.binary
        grid = [[b.tn, b.fp], [b.fn, b.tp]]  # rows: human fail/success; cols: verifier fail/success
        ax.imshow(grid, cmap="Blues")
        top = max(max(row) for row in grid) or 1
        for i in range(2):
            for j in range(2):
                ax.text(j, i, str(grid[i][j]), ha="center", va="center", fontsize=12,
                        color="white" if grid[i][j] > top / 2 else "black")
        ax.set_xticks([0, 1], ["fail", "success"])
        ax.set_yticks([0, 1], ["fail", "success"])
        ax.set_xlabel("verifier")
        ax.set_ylabel("human")
        ax.set_title(f"{r.verifier}: {r.target}\nvs {LABEL_SOURCE_TITLES[r.label_source]}\n"
                     f"kappa {b.kappa.value:.2f}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_scatter(verdicts: Sequence[Verdict], labels: Sequence[HumanLabels], path: Path) -> Path | None:
    """Verifier process score vs median UV-blind human score (the paper's Figure 11)."""
    human = {h.task_id: h.blind_median_process_score for h in labels}
    series: dict[str, tuple[list[float], list[float]]] = {}
    for v in verdicts:
        h = human.get(v.task_id)
        if v.process_score is None or h is None:
            continue
        xs, ys = series.setdefault(v.verifier, ([], []))
        xs.append(h)
        ys.append(v.process_score)
    if not series:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 5))
    import numpy as np

    for name, (xs, ys) in series.items():
        r = np.corrcoef(xs, ys)[0, 1] if len(xs) > 1 and np.ptp(xs) > 0 and np.ptp(ys) > 0 else float("nan")
        ax.scatter(xs, ys, s=14, alpha=0.6, label=f"{name} (n={len(xs)}, r={r:.2f})")
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("median UV-blind human process score")
    ax.set_ylabel("verifier process score")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_taxonomy(taxonomy: dict[str, dict[str, int]], path: Path) -> Path | None:
    """Failure categories flagged by each verifier's diagnosis, as grouped horizontal bars."""
    cats = sorted({c for counts in taxonomy.values() for c in counts})
    if not cats:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(cats) * max(1, len(taxonomy)) + 1.2))
    height = 0.8 / len(taxonomy)
    for k, (name, counts) in enumerate(taxonomy.items()):
        ax.barh([i + k * height for i in range(len(cats))], [counts.get(c, 0) for c in cats], height=height,
                label=name)
    ax.set_yticks([i + height * (len(taxonomy) - 1) / 2 for i in range(len(cats))], cats, fontsize=8)
    ax.set_xlabel("trajectories flagged")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
