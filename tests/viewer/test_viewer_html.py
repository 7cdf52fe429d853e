"""The viewer's HTML, without a browser: structure, escaping, links, images once per hash, weight."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html import unescape
from pathlib import Path

from PIL import Image
from pydantic import BaseModel

from cua_verifier.cli import main
from verifier.viewer import Section, Table, build_site, model_sections, render_report
from verifier.viewer.images import THUMB_WIDTH

from .helpers import HOSTILE, make_trajectory, rich_result, write_results


def pages(site: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in (site / "r").glob("*.html")}


def page_of(site: Path, stats, rid: str) -> str:
    return (site / stats.links[rid]).read_text()


def test_site_from_scripted_scores_of_the_examples(repo_root, tmp_path, monkeypatch):
    """The README's flow: `score` the examples (scripted judge), then `view` the results."""
    from cua_verifier.cli import score_cmd
    from verifier.testing import ScriptedJudge

    monkeypatch.chdir(repo_root)
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: ScriptedJudge())
    results, site = tmp_path / "results.jsonl", tmp_path / "site"
    assert (
        main(
            [
                "score",
                "examples/trajectories",
                "--out",
                str(results),
                "--no-progress",
                "--model",
                "j",
                "--judge-url",
                "http://127.0.0.1:9/v1",
            ]
        )
        == 0
    )
    assert main(["view", str(results), "--out", str(site)]) == 0
    records = [json.loads(x) for x in results.read_text().splitlines()]
    index = (site / "index.html").read_text()
    hrefs = re.findall(r'<a href="(r/[^"]+\.html)"', index)
    assert len(hrefs) == len(records) == 3 and all((site / h).is_file() for h in hrefs)
    distinct = set()
    for rec in records:
        res = rec["result"]
        traj = json.loads((repo_root / rec["source"]).read_text())
        shots = [(repo_root / rec["source"]).parent / s["path"] for s in traj["screenshots"]]
        distinct |= {hashlib.sha256(p.read_bytes()).hexdigest() for p in shots}
        html = (site / hrefs[records.index(rec)]).read_text()
        assert html.count('<tr class="criterion') == len(res["criteria"])
        cells = len(res["relevance"]["matrix"]) * len(res["relevance"]["criteria"])
        assert len(re.findall(r'<td class="h[ "]', html)) == cells
        assert html.count('class="h l5 top"') == sum(len(v) for v in res["topk"].values())  # scripted: all 5
        for thumb in set(re.findall(r'<img src="\.\./(img/[0-9a-f]+_t\.jpg)"', html)):
            assert (site / thumb).is_file()
    # one full image and one thumbnail per distinct screenshot of the whole site
    assert len(list((site / "img").iterdir())) == 2 * len(distinct)


def test_hostile_text_renders_as_text(demo, tmp_path):
    stats = build_site(demo, tmp_path / "site")
    html = page_of(tmp_path / "site", stats, "trajs/hostile#0")
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    assert "<script>window" not in html and "<img src=x" not in html and "<b>bold?" not in html
    assert html.count("<script>") == 1  # only the page's own
    for field in (
        "thinking about step 2",
        "It costs $24.99.",
        "not $24.99.",
        "claimed a wrong price",
        "contradicts the cart.",
        "timeout on step 2",  # steps[].error and steps[].url (issue 20 V2)
        "https://shop.example.net/p2",
    ):
        assert f"{field} &lt;script&gt;" in html, field
    index = (tmp_path / "site" / "index.html").read_text()
    assert "&lt;script&gt;" in index and "<script>window" not in index  # unscored reason, task


def test_only_the_pages_own_script_may_run(demo, tmp_path):
    """The CSP allows exactly the inline script by hash, images from the site, nothing from the network."""
    build_site(demo, tmp_path / "site")
    for html in [*pages(tmp_path / "site").values(), (tmp_path / "site" / "index.html").read_text()]:
        csp = unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1))
        script = re.search(r"<script>(.*?)</script>", html, re.DOTALL).group(1)
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp
        assert not re.search(r'(src|href)="(https?:)?//', html)  # no network resource


def test_rich_rollout_page(demo, tmp_path):
    site = tmp_path / "site"
    stats = build_site(demo, site)
    html = page_of(site, stats, "trajs/mouse-price#0")
    assert html.count('<tr class="criterion') == 3 and '<tr class="criterion na"' in html  # c3 does not apply
    assert "2.5 / 5" in html  # half points shown as such
    assert html.count('class="h failed"') == 3  # screenshot 2's relevance call failed
    assert html.count(' top"') == 4  # top-2 cells of c1 and c2; c3 does not apply
    assert 'id="step-3"' in html and 'class="step failing first" id="step-3"' in html
    assert "Unsolicited cart addition" in html and "penalty: unsolicited cart addition" in html
    assert 'class="badge warn">relevance' in html and "JudgeUnavailableError: timeout" in html
    assert html.count('class="vote-yes"') == 1 and html.count('class="vote-no"') == 1 and "vote-none" in html
    assert "same as #4" in html  # duplicates
    assert ">rubric</td><td>2<" in html.replace("\n", "")  # prompt ids and versions


def test_unscored_rollout(demo, tmp_path):
    site = tmp_path / "site"
    stats = build_site(demo, site)
    index = (site / "index.html").read_text()
    row = re.search(
        r'<tr class="rollout" data-outcome="unscored"[^>]*data-status="unscored" data-reason="JudgeUnavailableError">(.*?)</tr>', index, re.DOTALL
    )
    assert row and "unscored: JudgeUnavailableError: down" in row.group(1)
    assert '<option value="JudgeUnavailableError">' in index  # filter by unscored reason
    html = page_of(site, stats, "trajs/missing#0")
    assert "Unscored." in html and "JudgeUnavailableError: down" in html
    assert "trajectory not found" in html


def test_thumbnails_written_once_per_hash(tmp_path):
    traj = make_trajectory(tmp_path / "t", 6, size=(1600, 1000))  # last two screenshots identical
    src = str(traj / "trajectory.json")
    results = write_results(
        tmp_path / "r.jsonl", [(f"t#{k}", src, rich_result(src, "t", 6), None) for k in range(3)]
    )
    site = tmp_path / "site"
    stats = build_site(results, site)
    assert stats.images == 2 * 5 and len(list((site / "img").iterdir())) == 10  # 5 distinct, 3 rollouts
    for thumb in (site / "img").glob("*_t.jpg"):
        with Image.open(thumb) as im:
            assert im.size == (THUMB_WIDTH, 200)
    with Image.open(next(p for p in (site / "img").glob("*.png"))) as im:
        assert im.size == (1600, 1000)  # full image untouched
    html = page_of(site, stats, "t#0")
    assert 'width="320" height="200" loading="lazy"' in html
    assert not re.search(r'<img src="[^"]+\.png"', html)  # pages embed thumbnails only; full size is a link


def test_page_weight_of_a_50_screenshot_rollout(tmp_path):
    traj = make_trajectory(tmp_path / "long", 50)
    src = str(traj / "trajectory.json")
    site = tmp_path / "site"
    stats = build_site(
        write_results(tmp_path / "r.jsonl", [("long#0", src, rich_result(src, "long", 50), None)]), site
    )
    html = page_of(site, stats, "long#0")
    thumbs = set(re.findall(r'<img src="\.\./(img/[^"]+)"', html))
    weight = len(html.encode()) + sum((site / t).stat().st_size for t in thumbs)
    full = sum(p.stat().st_size for p in (site / "img").glob("*.png"))
    print(
        f"\n50-screenshot page: html {len(html.encode()) / 1e3:.0f} kB + {len(thumbs)} thumbnails = "
        f"{weight / 1e3:.0f} kB (full images, loaded on click: {full / 1e3:.0f} kB), built in {stats.seconds:.2f} s"
    )
    assert len(thumbs) == 49 and weight < 1_500_000 and weight < full


def test_unknown_and_missing_fields_do_not_break_the_page(tmp_path):
    """Results of other schema versions: extra fields are shown as JSON, missing ones as blanks."""
    odd = {
        "trajectory_id": "x",
        "task_id": "x",
        "outcome_success": True,
        "process_score": None,
        "criteria": [
            {"id": "c1", "earned": 0.5, "max_points": 1, "half_point": True, "evidence": "oops"},
            "not a criterion",
        ],
        "relevance": {"criteria": ["c1"], "matrix": [[3], None, [11, 4], "bad"]},
        "topk": {"c1": [1, "2"]},
        "diagnosis": None,
        "usage": "n/a",
        "permission_profile": {"allowed": ["<purchase>"]},
        "truncation": [{"field": "thoughts", "kept": 600}],
    }
    lines = [
        {"id": "odd#0", "status": "scored", "result": odd},
        {"id": "min#0", "status": "scored", "result": {}},
        {"id": "bad#0", "status": "unscored", "reason": None, "result": None},
    ]
    results = tmp_path / "r.jsonl"
    results.write_text("".join(json.dumps(x) + "\n" for x in lines))
    stats = build_site(results, tmp_path / "site")
    assert stats.errors == [] and stats.pages == 4
    html = page_of(tmp_path / "site", stats, "odd#0")
    assert "permission_profile" in html and "&lt;purchase&gt;" in html and "truncation" in html
    assert "half_point: true" in html and "0.5 / 1" in html


def test_a_page_that_cannot_render_does_not_lose_the_site(demo, tmp_path, monkeypatch):
    from verifier.viewer import site as site_mod

    real = site_mod.rollout_view

    def flaky(rec, *a, **kw):
        if rec["id"] == "trajs/hostile#0":
            raise RuntimeError("boom <b>")
        return real(rec, *a, **kw)

    monkeypatch.setattr(site_mod, "rollout_view", flaky)
    stats = build_site(demo, tmp_path / "site")
    assert len(stats.errors) == 1 and "boom" in stats.errors[0]
    html = page_of(tmp_path / "site", stats, "trajs/hostile#0")
    assert "RuntimeError: boom &lt;b&gt;" in html and "&lt;script&gt;" in html  # raw record, escaped
    assert "Other fields" not in page_of(tmp_path / "site", stats, "trajs/mouse-price#0")  # others fine


def test_trajectories_flag_finds_moved_trajectories(tmp_path, capsys):
    traj = make_trajectory(tmp_path / "moved" / "shop-task", 3)
    results = write_results(
        tmp_path / "r.jsonl",
        [("elsewhere/shop-task#0", "/gone/trajectory.json", rich_result("/gone", "shop-task", 3), None)],
    )
    stats = build_site(results, tmp_path / "a")
    assert "trajectory not found" in page_of(tmp_path / "a", stats, "elsewhere/shop-task#0")
    assert main(["view", str(results), "--trajectories", str(traj.parent), "--out", str(tmp_path / "b")]) == 0
    assert "1 rollouts, 2 pages, 4 image files" in capsys.readouterr().out
    html = page_of(tmp_path / "b", stats, "elsewhere/shop-task#0")
    assert "trajectory not found" not in html and html.count("_t.jpg") >= 3  # 3 screenshots, 2 distinct


def test_view_without_results_is_a_usage_error(tmp_path, capsys):
    assert main(["view", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "s")]) == 2
    assert "no such results file" in capsys.readouterr().out


def test_generic_report_of_any_pydantic_model(tmp_path):
    """The hook for other reports (e.g. calibrate): a model rendered as tables, text escaped."""

    class Row(BaseModel):
        name: str
        value: float

    class Report(BaseModel):
        judge: str = "<judge>"
        threshold: float = 0.8
        rows: list[Row] = [Row(name="a<b", value=0.25), Row(name="c", value=1.0)]

    secs = model_sections(Report(), title="Calibration")
    assert [s.title for s in secs] == ["Calibration", "Calibration: rows"]
    out = render_report(
        "Calibration",
        [*secs, Section(title="extra", tables=[Table.of(["k"], [["v"]])])],
        tmp_path / "c.html",
        meta=[("judge", "x")],
    )
    html = out.read_text()
    assert (
        "&lt;judge&gt;" in html
        and "a&lt;b" in html
        and "0.25" in html
        and html.count('<table class="report">') == 3
    )
    assert HOSTILE not in html


def test_what_the_judge_was_shown_has_its_own_section(tmp_path):
    """Schema 1.2 fields (permission profile, history compression, truncations, unsupported claims)
    are rendered in their own section, escaped, and not as unknown "Other fields"."""
    res = {"trajectory_id": "s", "task_id": "s", "outcome_success": False,
           "permission_profile": {"critical_point": "not_granted", "task_words": "<b>don't buy</b>"},
           "history": {"steps": 120, "thoughts": "omitted", "arguments": "full"},
           "truncations": [{"field": "final_answer", "original_chars": 9000, "kept_chars": 6000}],
           "unsupported_claims": ["penalty without a screenshot"]}
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps({"id": "s#0", "status": "scored", "result": res}) + "\n")
    stats = build_site(results, tmp_path / "site")
    html = page_of(tmp_path / "site", stats, "s#0")
    section = html.split('id="shown"', 1)[1].split("</section>", 1)[0]
    for key in ("permission_profile", "history", "truncations", "unsupported_claims"):
        assert key in section
    assert "&lt;b&gt;don" in section and "<b>don" not in html
    assert "Other fields" not in html


def test_calls_cut_to_fit_the_context_are_listed(tmp_path):
    """Issue 24: what the budget cut, per stage and in order, is a table on the rollout page."""
    trims = [{"stage": "rescoring", "calls": 1, "cuts": ["compress_thoughts", "fewer_screenshots"],
              "screenshots_dropped": 1, "tokens_before": 41000, "tokens_after": 23000},
             {"stage": "<i>evidence</i>", "calls": 12, "cuts": ["compress_thoughts"], "tokens_before": 30000,
              "tokens_after": 20000},
             {"stage": "outcome", "calls": 1, "cuts": [], "tokens_before": 29900, "tokens_after": 29900,
              "reply_tokens": 2868}]
    res = {"trajectory_id": "s", "task_id": "s", "outcome_success": True,
           "history": {"steps": 150, "thoughts": "shortened", "context_tokens": 32768, "trims": trims}}
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps({"id": "s#0", "status": "scored", "result": res}) + "\n")
    stats = build_site(results, tmp_path / "site")
    html = page_of(tmp_path / "site", stats, "s#0")
    table = html.split('id="trims"', 1)[1].split("</table>", 1)[0]
    assert "32768 tokens" in table and "compress_thoughts, fewer_screenshots" in table
    assert "41000" in table and "23000" in table and "&lt;i&gt;evidence" in table and "<i>evidence" not in html
    assert "reply room" in table and "2868" in table and "full" in table  # a smaller reply room is shown too
