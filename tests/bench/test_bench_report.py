"""Report rendering and the `bench --from-labels` command."""
from __future__ import annotations

import pytest

from cua_verifier.cli import main
from verifier.bench.labels import HumanLabels, Verdict, agreement_table, read_labels_csv
from verifier.bench.metrics import inter_annotator
from verifier.bench.report import ReportInputs, UsageRow, load_inputs, write_report

CSV = "cuaverifierbench/om2w_labels_and_uv_verdicts.csv"


def _inputs():
    labels = [HumanLabels(task_id=f"t{i}", final_outcome=i % 2 == 0, final_process=i % 3 == 0,
                          blind_majority_outcome=i % 4 == 0, blind_median_process_score=i / 9) for i in range(10)]
    verdicts = [Verdict(task_id=f"t{i}", verifier="uv", outcome_success=i % 2 == 0 or i == 3,
                        process_score=min(1.0, i / 8)) for i in range(10)]
    verdicts += [Verdict(task_id=f"t{i}", verifier="webvoyager", outcome_success=i != 0) for i in range(9)]
    verdicts.append(Verdict(task_id="t9", verifier="webvoyager"))  # unscored
    rows = agreement_table(verdicts, labels, n_boot=100)
    ia = inter_annotator({f"t{i}": {"J1": i % 2 == 0, "J2": i % 3 == 0} for i in range(10)})
    return ReportInputs(split="fara7b_om2w_browserbase", rows=rows, verdicts=verdicts, labels=labels,
                        usage=[UsageRow(verifier="uv", n=10, calls_mean=12.5, prompt_tokens_mean=3000,
                                        completion_tokens_mean=400, latency_s_mean=2.5, latency_s_p50=2.0,
                                        latency_s_max=5.0)],
                        taxonomy={"uv": {"Selection": 2, "Hallucination": 1}}, inter_annotator={"outcome": ia})


def test_report_renders_tables_and_pngs(tmp_path):
    paths = write_report(_inputs(), tmp_path)
    for key in ("md", "html", "confusion", "scatter", "taxonomy", "inputs"):
        assert paths[key].exists() and paths[key].stat().st_size > 0, key
    for key in ("confusion", "scatter", "taxonomy"):
        assert paths[key].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md, page = paths["md"].read_text(), paths["html"].read_text()
    assert "| webvoyager | outcome | final adjudicated (UV-informed) | 9 | 1 |" in md
    assert "WebJudge (paper)" in md and "0.26" in md  # paper reference rows
    assert "Judge cost per trajectory" in md and "12.5" in md
    assert "Inter-annotator agreement" in md
    assert "| Universal Verifier (paper) | fara7b_om2w_browserbase | paper, final labels |  | 0.58 | 0.08 |" in md
    assert "| Universal Verifier (paper) | internal | paper, final labels" not in md  # summary: own split only
    # HTML: the viewer's look, figures inline (no PNG needed), intervals drawn next to estimates
    assert page.count('<table class="report">') == 7  # summary, metrics, correlation, IA, cost, per task, paper
    assert page.count('<table class="confusion">') == sum(
        1 for r in _inputs().rows if r.target in ("outcome", "process") and r.binary is not None)
    assert "data:image/png" not in page and "<svg" in page and 'class="ci"' in page
    assert page.count('<tr class="ref">') == 3 + 7  # the paper's rows for this split beside ours, then all
    assert "Content-Security-Policy" in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "webvoyager" in page
    # inputs round-trip: the report can be re-rendered without recomputing anything
    assert load_inputs(paths["inputs"]).rows == _inputs().rows


def test_report_links_verdicts_to_rollout_pages(tmp_path):
    """With results logs beside the report, every verdict links to its rollout's page, which exists."""
    import re

    from tests.viewer.helpers import rich_result, write_results

    write_results(tmp_path / "results_uv.jsonl",
                  [(f"t{i}", f"split/t{i}", rich_result(f"t{i}", f"t{i}", 3), None) for i in range(9)]
                  + [("t9", "split/t9", None, "JudgeUnavailableError: down")])
    paths = write_report(_inputs(), tmp_path)
    page = paths["html"].read_text()
    hrefs = re.findall(r'<a href="(view/uv/r/[^"]+\.html)">', page)
    assert len(hrefs) == 10 and all((tmp_path / h).is_file() for h in hrefs)
    assert 'href="view/uv/index.html"' in page
    assert "view/webvoyager" not in page  # no results log for it: plain text, no dead link


def test_unscored_is_counted_not_failed():
    rows = {(r.verifier, r.target, r.label_source): r for r in _inputs().rows}
    wv = rows[("webvoyager", "outcome", "final")]
    assert wv.n_unscored == 1 and wv.binary.n == 9
    assert ("webvoyager", "process", "final") not in rows  # verdict-only baseline: no process rows


def test_bench_from_labels_prints_reference_table(shared_data, capsys, tmp_path):
    assert main(["bench", "--from-labels", str(shared_data / CSV), "--n-boot", "200", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("uv (dataset, stored)") and "outcome  final" in ln)
    assert line.split()[5:14] == ["106", "11", "4", "6", "85", "0.906", "0.632", "0.045", "0.353"]
    blind = next(ln for ln in out.splitlines() if ln.startswith("uv (dataset, stored)") and "outcome  uv_blind" in ln)
    assert blind.split()[6:12] == ["11", "4", "18", "73", "0.792", "0.385"]
    assert "pearson 0.674" in out
    assert (tmp_path / "report.html").exists() and (tmp_path / "scatter.png").exists()


def test_read_labels_csv_rejects_other_files(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="task_id"):
        read_labels_csv(bad)
