"""The bench report's HTML sections, drawn with the viewer's templates (`verifier.viewer.report`).

Same content as the markdown report, but with every bootstrap interval drawn next to its
estimate, the paper's reference rows shaded beside ours, confusion matrices and the score scatter
inline (no image files), and a per-task table linking each verdict to its rollout page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..viewer import Cell, Figure, Section, Table, confusion_matrix, svg
from .labels import LABEL_SOURCE_TITLES, AgreementRow, Verdict
from .metrics import BINARY_METRICS, Stat
from .report_tables import (
    PAPER_TABLE2,
    ReportInputs,
    correlation_table,
    inter_annotator_table,
    paper_table,
    usage_table,
)


def stat_cell(s: Stat) -> Cell:
    if math.isnan(s.value):
        return Cell(text="n/a", cls="num")
    if math.isnan(s.lo) or math.isnan(s.hi):
        return Cell(text=f"{s.value:.3f}", cls="num")
    return Cell(text=f"{s.value:.3f}", note=f"[{s.lo:.2f}, {s.hi:.2f}]", cls="num", ci=(s.value, s.lo, s.hi))


def summary(rows: Sequence[AgreementRow], split: str | None) -> Table:
    """Outcome agreement with CIs; the paper's Table 2 rows for the same split shaded below ours."""
    body, classes = [], []
    for r in rows:
        if r.target == "outcome" and r.binary is not None:
            b = r.binary
            body.append(
                [
                    r.verifier,
                    split or "",
                    LABEL_SOURCE_TITLES[r.label_source],
                    str(b.n),
                    stat_cell(b.kappa),
                    stat_cell(b.fpr),
                    stat_cell(b.fnr),
                    stat_cell(b.accuracy),
                ]
            )
            classes.append("")
    for name, ref_split, kappa, fpr in PAPER_TABLE2:
        if split is None or ref_split == split:
            body.append([name, ref_split, "paper, final labels", "", kappa, fpr, "", ""])
            classes.append("ref")
    return Table.of(
        ["verifier", "split", "labels", "n", "kappa", "FPR", "FNR", "accuracy"],
        body,
        row_classes=classes,
        caption="Shaded rows: the paper's figures (its own judge models), "
        "a yardstick rather than an expected value.",
    )


def metrics(rows: Sequence[AgreementRow]) -> Table:
    body = [
        [
            r.verifier,
            r.target,
            LABEL_SOURCE_TITLES[r.label_source],
            str(r.binary.n),
            str(r.n_unscored),
            *[str(getattr(r.binary, k)) for k in ("tp", "fp", "fn", "tn")],
            *[stat_cell(getattr(r.binary, m)) for m in BINARY_METRICS],
        ]
        for r in rows
        if r.binary is not None
    ]
    return Table.of(
        ["verifier", "target", "labels", "n", "unscored", "tp", "fp", "fn", "tn", *BINARY_METRICS], body
    )


def confusions(rows: Sequence[AgreementRow]) -> list[Figure]:
    return [
        confusion_matrix(
            r.binary.tp,
            r.binary.fp,
            r.binary.fn,
            r.binary.tn,
            f"{r.verifier}: {r.target} vs {LABEL_SOURCE_TITLES[r.label_source]}",
        )
        for r in rows
        if r.target in ("outcome", "process") and r.binary is not None
    ]


def scatter(inp: ReportInputs) -> list[Figure]:
    human = {h.task_id: h.blind_median_process_score for h in inp.labels}
    series: dict[str, tuple[list[float], list[float]]] = {}
    for v in inp.verdicts:
        h = human.get(v.task_id)
        if v.process_score is not None and h is not None:
            xs, ys = series.setdefault(v.verifier, ([], []))
            xs.append(h)
            ys.append(v.process_score)
    if not series:
        return []
    return [
        Figure(
            svg=str(
                svg.scatter(
                    series,
                    "verifier vs human process score",
                    xlabel="median UV-blind human score",
                    ylabel="verifier score",
                )
            )
        )
    ]


def taxonomy(tax: dict[str, dict[str, int]]) -> list[Figure]:
    return [
        Figure(
            svg=str(
                svg.bars(
                    [
                        (c, n, svg.PALETTE[i % len(svg.PALETTE)])
                        for c, n in sorted(counts.items(), key=lambda kv: -kv[1])
                    ],
                    f"{name}: failure categories",
                )
            )
        )
        for i, (name, counts) in enumerate(tax.items())
        if counts
    ]


def per_task(inp: ReportInputs, links: dict[tuple[str, str], str]) -> Table:
    """One row per task: human labels, then each verifier's verdict (linked to its rollout page)."""
    names = list(dict.fromkeys(v.verifier for v in inp.verdicts))
    by: dict[tuple[str, str], Verdict] = {(v.verifier, v.task_id): v for v in inp.verdicts}
    tasks = list(dict.fromkeys([h.task_id for h in inp.labels] + [v.task_id for v in inp.verdicts]))
    labels = {h.task_id: h for h in inp.labels}

    def yn(x: bool | None) -> str:
        return "" if x is None else ("success" if x else "failure")

    body = []
    for t in tasks:
        h = labels.get(t)
        row: list = [
            t,
            yn(h.final_outcome if h else None),
            yn(h.blind_majority_outcome if h else None),
            ""
            if h is None or h.blind_median_process_score is None
            else f"{h.blind_median_process_score:.2f}",
        ]
        for n in names:
            v = by.get((n, t))
            if v is None:
                row.append("")
                continue
            text = "unscored" if v.outcome_success is None else yn(v.outcome_success)
            if v.process_score is not None:
                text += f" · {v.process_score:.2f}"
            agree = h is not None and h.final_outcome is not None and v.outcome_success is not None
            cls = "" if not agree else ("ok" if v.outcome_success == h.final_outcome else "bad")
            row.append(Cell(text=text, href=links.get((n, t)), cls=f"verdict-{cls}" if cls else ""))
        body.append(row)
    return Table.of(
        ["task", "human final", "human blind", "blind process", *names],
        body,
        caption="Verdicts that disagree with the final human label are marked red.",
    )


def html_sections(inp: ReportInputs, links: dict[tuple[str, str], str]) -> list[Section]:
    secs = [
        Section(
            title="Outcome agreement (95% bootstrap CI), with the paper's figures",
            tables=[summary(inp.rows, inp.split)],
        ),
        Section(
            title="Confusion matrices",
            figures=confusions(inp.rows),
            intro="Rows: the human label; columns: the verifier's verdict. FP (fail judged success) "
            "is the reward a policy learns to hack.",
        ),
        Section(title="Every binary metric (95% bootstrap CI)", tables=[metrics(inp.rows)]),
        Section(
            title="Process score vs median UV-blind human score",
            tables=[Table.of(*correlation_table(inp.rows))],
            figures=scatter(inp),
        ),
    ]
    if inp.inter_annotator:
        secs.append(
            Section(
                title="Inter-annotator agreement (UV-blind)",
                tables=[Table.of(*inter_annotator_table(inp.inter_annotator))],
            )
        )
    if inp.usage:
        secs.append(Section(title="Judge cost per trajectory", tables=[Table.of(*usage_table(inp.usage))]))
    if inp.taxonomy:
        secs.append(Section(title="Error taxonomy (verifier diagnosis)", figures=taxonomy(inp.taxonomy)))
    if inp.verdicts:
        secs.append(
            Section(
                title="Per task",
                tables=[per_task(inp, links)],
                intro="Linked verdicts open the rollout's page (rubric, evidence, diagnosis)."
                if links
                else "",
            )
        )
    secs.append(
        Section(
            title="Reference figures",
            tables=[Table.of(*paper_table(), row_classes=["ref"] * len(PAPER_TABLE2))],
            intro="arXiv 2604.06240, Table 2 (outcome labels), measured with the paper's judges.",
        )
    )
    return secs
