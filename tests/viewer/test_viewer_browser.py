"""Every page type loaded in a real headless Chromium (Debian's package) over file://.

Checks what only a browser can: no console or page errors (CSP violations included), the key
elements are there and laid out (criteria rows, heat-map cells, thumbnails actually decoded), the
index's filters and sorting work, the lightbox opens, and a hostile trajectory's HTML/script shows
as text and runs nothing. Each page type is saved as a PNG (under $CUA_VIEWER_SCREENSHOTS when set,
which is how docs/viewer/ is refreshed). Without Chromium or Playwright this tier skips locally
and fails under CI=true.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from verifier.bench.report import write_report
from verifier.viewer import build_site

from .helpers import HOSTILE, make_trajectory, rich_result, write_results

pytestmark = pytest.mark.browser  # real Chromium

@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A results file (rich, hostile, unscored, plus a few plain ones) rendered as a site and a bench report."""
    tmp = tmp_path_factory.mktemp("viewer")
    entries = []
    # the rich rollout uses the bundled example's real screenshots (640x400, the last two identical)
    example = Path(__file__).resolve().parents[2] / "examples" / "trajectories" / "mouse-price-side-effect"
    mouse = tmp / "trajs" / "mouse-price"
    if example.is_dir():
        shutil.copytree(example, mouse)
    else:
        make_trajectory(mouse, 5, size=(640, 400))
    instruction = json.loads((mouse / "trajectory.json").read_text())["task"]["instruction"]
    res = rich_result(str(mouse / "trajectory.json"), "mouse-price", 5).model_copy(update={"task": instruction})
    entries.append(("trajs/mouse-price#0", str(mouse / "trajectory.json"), res, None))
    t = make_trajectory(tmp / "trajs" / "hostile", 4, hostile=True)
    entries.append(("trajs/hostile#0", str(t / "trajectory.json"),
                    rich_result(str(t / "trajectory.json"), "hostile", 4, hostile=True), None))
    for i, score in enumerate((0.9, 0.35, 1.0)):
        t = make_trajectory(tmp / "trajs" / f"task-{i}", 3)
        res = rich_result(str(t / "trajectory.json"), f"task-{i}", 3).model_copy(
            update={
                "process_score": score,
                "process_success": score >= 0.8,
                "outcome_success": score >= 0.8,
                "degraded": [],
                "hallucination_suspected": False,
                "forced_failure": [],
            }
        )
        if i == 0:  # a weak judge's reply: one unbroken 3000-character word
            res.criteria[0].justification = res.criteria[0].name = "ch" * 1500
        entries.append((f"trajs/task-{i}#0", str(t / "trajectory.json"), res, None))
    entries.append(
        ("trajs/missing#0", "trajs/missing/trajectory.json", None, f"JudgeUnavailableError: down {HOSTILE}")
    )
    results = write_results(tmp / "results.jsonl", entries)
    stats = build_site(results, tmp / "site")
    from tests.bench.test_bench_report import _inputs

    bench = tmp / "bench"
    bench.mkdir()
    write_results(
        bench / "results_uv.jsonl",
        [(f"t{i}", f"s/t{i}", rich_result(f"t{i}", f"t{i}", 3), None) for i in range(10)],
    )
    write_report(_inputs(), bench)
    return {"root": tmp / "site", "links": stats.links, "bench": bench / "report.html"}


@pytest.fixture(scope="module")
def browser(browser_ok):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A page that records console errors, page errors and dialogs (an alert would be a script run)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    pg.problems = []
    pg.on(
        "console",
        lambda m: m.type in ("error", "warning") and pg.problems.append(f"console {m.type}: {m.text}"),
    )
    pg.on("pageerror", lambda e: pg.problems.append(f"page error: {e}"))
    pg.on("dialog", lambda d: (pg.problems.append(f"dialog: {d.message}"), d.dismiss()))
    yield pg
    ctx.close()


def shoot(pg, name: str, tmp_path: Path, full_page: bool = False) -> Path:
    out = Path(os.environ.get("CUA_VIEWER_SCREENSHOTS") or tmp_path) / f"{name}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(out), full_page=full_page)
    assert out.stat().st_size > 10_000 and out.read_bytes()[:4] == b"\x89PNG"
    return out


def test_index(page, site, tmp_path):
    page.goto((site["root"] / "index.html").as_uri())
    rows = page.locator("#rollouts tbody tr")
    assert rows.count() == 6
    assert page.locator("svg.chart").count() == 4
    page.select_option("select[data-filter=outcome]", "unscored")
    assert page.locator("#rollouts tbody tr:visible").count() == 1 and page.inner_text("#shown") == "1"
    assert "unscored: JudgeUnavailableError: down <script>" in page.inner_text("#rollouts tbody tr:visible")
    page.select_option("select[data-filter=outcome]", "")
    page.select_option("select[data-filter=reason]", "JudgeUnavailableError")
    assert page.locator("#rollouts tbody tr:visible").count() == 1
    page.select_option("select[data-filter=reason]", "")
    page.select_option("select[data-filter=band]", "0.8-1")
    assert page.locator("#rollouts tbody tr:visible").count() == 2
    page.select_option("select[data-filter=band]", "")
    page.click("#rollouts th:nth-child(3)")  # sort by process, ascending then descending
    page.click("#rollouts th:nth-child(3)")
    assert page.locator("#rollouts tbody tr").first.locator("td").nth(2).inner_text().startswith("1")
    shoot(page, "index", tmp_path)
    assert page.problems == []


def test_rollout_page(page, site, tmp_path):
    page.goto((site["root"] / site["links"]["trajs/mouse-price#0"]).as_uri())
    assert page.locator("tr.criterion").count() == 3
    assert page.locator(".heat td.h").count() == 5 * 3 and page.locator(".heat td.top").count() == 4
    thumbs = page.locator("a.shot img")
    assert thumbs.count() >= 5
    shoot(page, "rollout", tmp_path)
    page.locator("#relevance").scroll_into_view_if_needed()
    page.wait_for_function("() => [...document.querySelectorAll('.heat a.shot img')].every(e => e.complete)")
    widths = page.eval_on_selector_all(
        ".heat a.shot img", "els => els.map(e => e.complete && e.naturalWidth)"
    )
    assert widths and all(w == 320 for w in widths)  # lazy thumbnails decoded, at thumbnail size
    assert page.locator("li.step.first").count() == 1 and "Step 3" in page.inner_text("li.step.first")
    page.evaluate("document.querySelector('#relevance').scrollIntoView()")
    shoot(page, "rollout-evidence", tmp_path)
    page.locator(".heat a.shot").first.click()
    assert page.locator("#lightbox").is_visible()
    page.wait_for_function("() => document.querySelector('#lightbox img').complete")
    assert page.eval_on_selector("#lightbox img", "e => e.complete && e.naturalWidth") == 640  # full size
    page.keyboard.press("Escape")
    assert page.locator("#lightbox").is_hidden()
    assert page.problems == []


def test_long_unbroken_text_wraps(page, site):
    page.goto((site["root"] / site["links"]["trajs/task-0#0"]).as_uri())
    assert "chch" in page.inner_text("#rubric")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert page.problems == []


def test_hostile_trajectory_renders_as_text(page, site, tmp_path):
    page.goto((site["root"] / site["links"]["trajs/hostile#0"]).as_uri())
    page.wait_for_load_state("load")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("script").count() == 1 and page.locator("img[src=x]").count() == 0
    assert page.eval_on_selector_all("b", "els => els.filter(e => e.textContent === 'bold?').length") == 0
    assert HOSTILE in page.inner_text("#task")
    assert page.inner_text("#final-answer") == f"It costs $24.99. {HOSTILE}"
    body = page.inner_text("main")
    assert body.count("<script>window.__pwned=1</script>") >= 8  # task, thoughts, answer, judge replies ...
    shoot(page, "hostile", tmp_path)
    assert page.problems == []


def test_bench_report_links_to_rollouts(page, site, tmp_path):
    page.goto(site["bench"].as_uri())
    assert page.locator("table.confusion").count() >= 4 and page.locator("tr.ref").count() >= 3
    assert page.locator("svg.ci").count() > 10
    shoot(page, "bench-report", tmp_path)
    page.click("a[href^='view/uv/r/']")
    page.wait_for_load_state("load")
    assert page.locator("tr.criterion").count() == 3 and "/view/uv/r/" in page.url
    assert page.problems == []
