"""The benchmark report: markdown + HTML tables, confusion matrices, score scatter, taxonomy, cost.

The HTML page embeds the PNGs (data URLs), so it is one self-contained file to share.
Everything is computed from a `ReportInputs` (agreement rows, verdicts, labels, usage, taxonomy
counts), which is itself written to `report_inputs.json`, so a report can be re-rendered or diffed
without re-running anything. Plots use matplotlib's Agg backend (no display needed).

The tables themselves (and `ReportInputs`) are in `report_tables`, which both this module and the
HTML sections (`report_html`) read; this module calls `report_html`, never the other way round.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .report_tables import (  # noqa: F401 - PAPER_TABLE2, UsageRow, load_inputs: importable here as before
    PAPER_TABLE2,
    ReportInputs,
    Table,
    UsageRow,
    correlation_table,
    inter_annotator_table,
    load_inputs,
    metric_table,
    paper_table,
    summary_table,
    usage_table,
)


def _md(table: Table) -> str:
    head, body = table
    esc = lambda s: str(s).replace("|", "\\|")
    lines = ["| " + " | ".join(map(esc, head)) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(map(esc, row)) + " |" for row in body]
    return "\n".join(lines)


def _sections(inp: ReportInputs) -> list[tuple[str, Table]]:
    secs = [("Outcome agreement (95% bootstrap CI), with the paper's figures", summary_table(inp.rows, inp.split)),
            ("Every binary metric (95% bootstrap CI)", metric_table(inp.rows)),
            ("Process score vs median UV-blind human score", correlation_table(inp.rows))]
    if inp.inter_annotator:
        secs.append(("Inter-annotator agreement (UV-blind)", inter_annotator_table(inp.inter_annotator)))
    if inp.usage:
        secs.append(("Judge cost per trajectory", usage_table(inp.usage)))
    secs.append(("Reference figures", paper_table()))
    return secs


def write_report(inp: ReportInputs, out_dir: str | Path, *, results_dir: str | Path | None = None,
                 trajectories: Sequence[str | Path] = ()) -> dict[str, Path]:
    """Write report.md, report.html, the PNGs and report_inputs.json; return their paths.

    When ``results_dir`` (default: `out_dir`) holds ``results_<verifier>.jsonl`` logs, each is
    also rendered as a viewer site under ``out_dir/view/<verifier>/`` and the HTML report's
    per-task table links every verdict to its rollout page.
    """
    from .plots import plot_confusions, plot_scatter, plot_taxonomy

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"inputs": out / "report_inputs.json", "md": out / "report.md", "html": out / "report.html"}
    paths["inputs"].write_text(inp.model_dump_json(indent=1), encoding="utf-8")
    images = {"confusion": plot_confusions(inp.rows, out / "confusion.png"),
              "scatter": plot_scatter(inp.verdicts, inp.labels, out / "scatter.png"),
              "taxonomy": plot_taxonomy(inp.taxonomy, out / "taxonomy.png")}
    images = {k: v for k, v in images.items() if v is not None}
    paths.update(images)
    md = [f"# {inp.title}", "", _meta(inp), ""]
    for title, table in _sections(inp):
        md += [f"## {title}", "", _md(table), ""]
    for key, caption in (("confusion", "Confusion matrices"), ("scatter", "Verifier vs human process score"),
                         ("taxonomy", "Error taxonomy (verifier diagnosis)")):
        if key in images:
            md += [f"## {caption}", "", f"![{caption}]({images[key].name})", ""]
    md += [f"- {n}" for n in inp.notes]
    paths["md"].write_text("\n".join(md) + "\n", encoding="utf-8")
    links = _rollout_sites(Path(results_dir) if results_dir is not None else out, out, trajectories)
    from ..viewer import render_report
    from .report_html import html_sections

    render_report(inp.title, html_sections(inp, links), paths["html"],
                  meta=[("split", inp.split or "n/a"), ("process threshold", str(inp.threshold)),
                        ("bootstrap", f"{inp.n_boot} resamples, seed {inp.seed}")], notes=inp.notes,
                  links=[(f"{name} rollouts", f"view/{name}/index.html") for name in sorted({v for v, _ in links})])
    return paths


def _meta(inp: ReportInputs) -> str:
    return (f"split: {inp.split or 'n/a'} | process threshold: {inp.threshold} | bootstrap: {inp.n_boot} "
            f"resamples, seed {inp.seed}")


def _rollout_sites(results_dir: Path, out: Path, trajectories: Sequence[str | Path]) -> dict[tuple[str, str], str]:
    """Build a viewer site per results log; (verifier, task id) -> page path relative to `out`."""
    from ..viewer import build_site

    links: dict[tuple[str, str], str] = {}
    for log_path in sorted(results_dir.glob("results_*.jsonl")):
        name = log_path.name[len("results_"):-len(".jsonl")]
        stats = build_site(log_path, out / "view" / name, trajectories=trajectories,
                           title=f"{name}: rollouts of {log_path.name}")
        links.update({(name, rid): f"view/{name}/{rel}" for rid, rel in stats.links.items()})
    return links
