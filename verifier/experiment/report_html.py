"""The experiment report as an HTML page in the viewer's look, and the rollout pages its flips link to.

Why build the rollout pages here: a flip is only useful read side by side (the expert's biggest
gains in the paper came from reading which cases flipped), so each flip links the item's page in
the baseline and in the arm, for every repeat, built by the viewer into DIR/pages/<arm>/r<k>/.
"""
from __future__ import annotations

import logging
import math
import os
from pathlib import Path

from ..viewer import Cell, Section, Table, render_report
from .report import FIELDS, ExperimentReport
from .runner import log_path

log = logging.getLogger(__name__)
PAGES = "pages"


def build_pages(out: Path, rep: ExperimentReport) -> dict[str, dict[str, list[str]]]:
    """arm -> item id -> page per repeat (relative to DIR) for the items some arm flipped."""
    from ..viewer import build_site

    flipped = {f.id for a in rep.arms for fl in a.flips.values() for f in fl}
    links: dict[str, dict[str, list[str]]] = {}
    if not flipped:
        return links
    for a in rep.arms:
        for r in range(rep.repeats):
            results = log_path(out, a.name, r)
            if not results.is_file():
                continue
            site = out / PAGES / a.name / f"r{r}"
            try:
                stats = build_site(results, site, title=f"{rep.name}: arm {a.name}, repeat {r + 1}")
            except (OSError, ValueError) as exc:  # a report without pages is still a report
                log.warning("rollout pages of %s repeat %d not built: %s", a.name, r, exc)
                continue
            for rid in flipped:
                if rid in stats.links:
                    rel = (site / stats.links[rid]).relative_to(out).as_posix()
                    links.setdefault(a.name, {}).setdefault(rid, []).append(rel)
    return links


def _num(v: float, digits: int) -> str:
    return "n/a" if math.isnan(v) else f"{v:,.{digits}f}"


def _stat_cell(s: object) -> Cell:
    v, lo, hi = (getattr(s, k, math.nan) for k in ("value", "lo", "hi"))
    if math.isnan(v):
        return Cell(text="n/a")
    ci = None if math.isnan(lo) else (v, lo, hi)
    return Cell(text=f"{v:.3f}", note="" if ci is None else f"[{lo:.3f}, {hi:.3f}]", ci=ci)


def _page_links(rep: ExperimentReport, arm: str, rid: str, base: Path, out: Path) -> Cell:
    pages = rep.pages.get(arm, {}).get(rid, [])
    if not pages:
        return Cell(text="")
    href = os.path.relpath(out / pages[0], base)
    return Cell(text=f"{arm} r1", href=href, note=" ".join(f"r{k + 1}" for k in range(1, len(pages))))


def write_html(rep: ExperimentReport, path: Path, out: Path) -> Path:
    base = path.resolve().parent
    out = out.resolve()
    sections = []
    for target in FIELDS:
        rows, classes = [], []
        for a in rep.arms:
            s = a.targets.get(target)
            if s is None:
                continue
            m = s.metrics
            rows.append([Cell(text=a.name + (" (baseline)" if a.baseline else "")), s.n,
                         _stat_cell(m["kappa"]), _stat_cell(m["fpr"]), _stat_cell(m["fnr"]), _stat_cell(m["accuracy"]),
                         f"{s.spread['kappa'].range:.3f}", f"{s.spread['fpr'].range:.3f}",
                         "n/a" if math.isnan(s.unstable) else f"{s.unstable:.2f}", s.unscored])
            classes.append("baseline" if a.baseline else "")
        if rows:
            sections.append(Section(title=f"{target.capitalize()} agreement", intro=(
                "Each figure is the mean over the repeats, with a 95% bootstrap interval over items and repeats; "
                "spread is max - min over repeats (the noise floor); unstable is the share of items whose "
                "verdict changed between repeats."), tables=[Table.of(
                    ["arm", "n", "kappa", "FPR", "FNR", "accuracy", "kappa spread", "FPR spread", "unstable",
                     "unscored"], rows, row_classes=classes)]))
    decisions = [[a.name, Cell(text=a.decision.verdict, cls=f"decision-{a.decision.verdict}"),
                  _stat_cell(a.decision.delta_kappa), _stat_cell(a.decision.delta_fpr),
                  f"{a.decision.fpr_noise:.3f}", a.decision.reason] for a in rep.arms if a.decision]
    deltas = [[a.name, target, _stat_cell(d["kappa"]), _stat_cell(d["fpr"]), _stat_cell(d["fnr"]),
               _stat_cell(d["accuracy"])] for a in rep.arms for target, d in a.deltas.items()]
    sections.append(Section(title="Decisions", intro=(
        "Accept only when delta kappa's interval lies above 0 and the FPR did not rise by more than the "
        "baseline's run-to-run FPR spread; reject when it did, or when delta kappa's interval lies below 0."),
        tables=[Table.of(["arm", "decision", "delta kappa", "delta FPR", "FPR noise", "reason"], decisions),
                Table.of(["arm", "target", "delta kappa", "delta FPR", "delta FNR", "delta accuracy"], deltas,
                         title="Paired differences against the baseline")]))
    base_name = next((a.name for a in rep.arms if a.baseline), "")
    flip_rows = [[a.name, target, f.id, "pass" if f.label else "fail", f.baseline_votes, f.arm_votes,
                  Cell(text=f.effect, cls=f"flip-{f.effect}"), _page_links(rep, base_name, f.id, base, out),
                  _page_links(rep, a.name, f.id, base, out)]
                 for a in rep.arms for target, fl in a.flips.items() for f in fl]
    sections.append(Section(title="Flips", intro=(
        "Items whose majority verdict changed between the baseline and the arm: read these to find the next "
        "structural change."), tables=[Table.of(["arm", "target", "item", "human", "baseline votes", "arm votes",
                                               "effect", "baseline page", "arm page"], flip_rows)]))
    cost_rows = [[a.name, a.cost.verifications, _num(a.cost.calls, 1), _num(a.cost.prompt_tokens, 0),
                  _num(a.cost.completion_tokens, 0), _num(a.cost.judge_latency_s, 2), _num(a.cost.wall_s, 2),
                  a.cost.calls_sent, a.cost.calls_shared] for a in rep.arms]
    sections.append(Section(title="Cost per verification", intro=(
        "Calls and tokens an arm costs on its own (shared calls counted as if sent); judge seconds is the "
        "sum of its calls' latencies; wall seconds as measured here; sent and shared are this folder's totals."),
        tables=[Table.of(["arm", "verifications", "calls", "prompt tokens", "completion tokens", "judge s",
                          "wall s", "calls sent", "calls shared"], cost_rows)]))
    meta = [("repeats", str(rep.repeats)), ("items", str(rep.items)), ("bootstrap", f"{rep.n_boot}, seed {rep.seed}"),
            ("calls saved by sharing", str(rep.calls_saved))]
    return render_report(f"Experiment {rep.name}", sections, path, meta=meta)


def write_outputs(rep: ExperimentReport, out: Path, *, json_path: str | None = None, html_path: str | None = None,
                  pages: bool = True) -> list[tuple[str, Path]]:
    """report.json, the rollout pages the flips link to (DIR/pages) and report.html."""
    written = []
    if pages:
        rep.pages = build_pages(out, rep)
    jp = Path(json_path) if json_path else out / "report.json"
    jp.write_text(rep.model_dump_json(indent=1) + "\n", encoding="utf-8")  # NaN -> null (undefined)
    written.append(("JSON", jp))
    hp = Path(html_path) if html_path else out / "report.html"
    write_html(rep, hp, out)
    written.append(("HTML", hp))
    return written
