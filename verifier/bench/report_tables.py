"""The benchmark report's tables and their inputs: plain rows, shared by the markdown and HTML reports.

Why a module of its own: `report` (which writes both reports) and `report_html` (the HTML
sections) both draw these tables; with the tables inside `report`, each of the two imported the
other. Now both import from here and `report` calls `report_html`, one way only.

The paper's Table 2 figures are printed as reference rows next to ours; they were measured with the
paper's own judge models, so they are a yardstick, not an expected value for any judge.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from .labels import LABEL_SOURCE_TITLES, AgreementRow, HumanLabels, Verdict
from .metrics import BINARY_METRICS, InterAnnotator

#: arXiv 2604.06240, Table 2 (outcome labels): (verifier, split, kappa, FPR).
PAPER_TABLE2 = [
    ("Universal Verifier (paper)", "internal", "0.64", "0.01"),
    ("Universal Verifier (paper)", "fara7b_om2w_browserbase", "0.58", "0.08"),
    ("WebJudge (paper)", "internal", "0.44", ">= 0.22"),
    ("WebJudge (paper)", "fara7b_om2w_browserbase", "0.26", ">= 0.22"),
    ("WebVoyager judge (paper)", "internal", "0.31", ">= 0.45"),
    ("WebVoyager judge (paper)", "fara7b_om2w_browserbase", "0.13", ">= 0.45"),
    ("Inter-annotator (paper)", "both", "outcome 0.53-0.57, process 0.36-0.45", ""),
]


class UsageRow(BaseModel):
    """Judge cost per scored trajectory for one verifier."""

    verifier: str
    n: int
    calls_mean: float
    prompt_tokens_mean: float
    completion_tokens_mean: float
    latency_s_mean: float
    latency_s_p50: float
    latency_s_max: float
    wall_s_mean: float | None = None


class ReportInputs(BaseModel):
    title: str = "CUAVerifierBench agreement report"
    split: str | None = None
    threshold: float = 0.8
    n_boot: int = 1000
    seed: int = 0
    rows: list[AgreementRow]
    verdicts: list[Verdict] = Field(default_factory=list)
    labels: list[HumanLabels] = Field(default_factory=list)
    usage: list[UsageRow] = Field(default_factory=list)
    taxonomy: dict[str, dict[str, int]] = Field(default_factory=dict)  # verifier -> category -> count
    inter_annotator: dict[str, InterAnnotator] = Field(default_factory=dict)  # "outcome"/"process" -> stats
    notes: list[str] = Field(default_factory=list)


Table = tuple[list[str], list[list[str]]]


def _f(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def metric_table(rows: Sequence[AgreementRow]) -> Table:
    head = ["verifier", "target", "labels", "n", "unscored", "tp", "fp", "fn", "tn",
            *[m if m != "kappa" else "kappa" for m in BINARY_METRICS]]
    body = []
    for r in rows:
        if r.binary is None:
            continue
        b = r.binary
        body.append([r.verifier, r.target, LABEL_SOURCE_TITLES[r.label_source], str(b.n), str(r.n_unscored),
                     str(b.tp), str(b.fp), str(b.fn), str(b.tn), *[getattr(b, m).fmt() for m in BINARY_METRICS]])
    return head, body


def summary_table(rows: Sequence[AgreementRow], split: str | None) -> Table:
    """Headline outcome figures, with the paper's Table 2 rows for the same split as references."""
    head = ["verifier", "split", "labels", "n", "kappa", "FPR", "FNR", "accuracy"]
    body = [[r.verifier, split or "", LABEL_SOURCE_TITLES[r.label_source], str(r.binary.n), r.binary.kappa.fmt(),
             r.binary.fpr.fmt(), r.binary.fnr.fmt(), r.binary.accuracy.fmt()]
            for r in rows if r.target == "outcome" and r.binary is not None]
    for name, ref_split, kappa, fpr in PAPER_TABLE2:
        if split is None or ref_split == split:
            body.append([name, ref_split, "paper, final labels", "", kappa, fpr, "", ""])
    return head, body


def correlation_table(rows: Sequence[AgreementRow]) -> Table:
    head = ["verifier", "n", "unscored", "pearson", "spearman", "MAE"]
    body = [[r.verifier, str(r.continuous.n), str(r.n_unscored), r.continuous.pearson.fmt(),
             r.continuous.spearman.fmt(), r.continuous.mae.fmt()] for r in rows if r.continuous is not None]
    return head, body


def usage_table(usage: Sequence[UsageRow]) -> Table:
    head = ["verifier", "n", "calls / traj", "prompt tok / traj", "completion tok / traj",
            "judge latency s / traj (mean)", "p50", "max", "wall s / traj"]
    body = [[u.verifier, str(u.n), _f(u.calls_mean, 1), _f(u.prompt_tokens_mean, 0), _f(u.completion_tokens_mean, 0),
             _f(u.latency_s_mean, 2), _f(u.latency_s_p50, 2), _f(u.latency_s_max, 2), _f(u.wall_s_mean, 2)]
            for u in usage]
    return head, body


def inter_annotator_table(ia: dict[str, InterAnnotator]) -> Table:
    head = ["label", "items (>= 2 annotators)", "annotators", "Fleiss kappa", "mean pairwise Cohen kappa",
            "pairs", "raw pair agreement"]
    body = [[k, str(v.n_items), str(v.n_annotators), _f(v.fleiss_kappa), _f(v.mean_pairwise_kappa), str(v.n_pairs),
             _f(v.pairwise_percent_agreement)] for k, v in ia.items()]
    return head, body


def paper_table() -> Table:
    return ["reference (paper Table 2, outcome)", "split", "kappa", "FPR"], [list(r) for r in PAPER_TABLE2]


def load_inputs(path: str | Path) -> ReportInputs:
    return ReportInputs.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))
