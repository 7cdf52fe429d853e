"""`cua-verifier view` on a rubric file (a page per task) and on results sharing a rubric (issue 36 §2, §5)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from rubric_helpers import counter_rubric

from cua_verifier.cli import main, score_cmd
from verifier.testing import ScriptedJudge

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "trajectories"
JUDGE = ["--judge-url", "http://127.0.0.1:9/v1", "--model", "judge"]


def test_a_rubric_file_is_a_page_per_task_with_what_the_check_found(tmp_path, monkeypatch):
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: ScriptedJudge({"rubric": counter_rubric([])}))
    rubrics = tmp_path / "rubrics.jsonl"
    assert main(["rubrics", str(EXAMPLES), "--out", str(rubrics), "--no-progress", *JUDGE]) == 0
    got = [json.loads(x) for x in rubrics.read_text().splitlines()]
    got[0]["rubric"]["permission"] = {"permission": "granted", "permission_quote": "go ahead and buy it"}
    rubrics.write_text("".join(json.dumps(x) + "\n" for x in got) + '{"task_id": "broken"}\n')
    assert main(["view", str(rubrics), "--out", str(tmp_path / "site")]) == 0
    pages = sorted((tmp_path / "site" / "t").glob("*.html"))
    assert len(pages) == len(got)
    index = (tmp_path / "site" / "index.html").read_text()
    assert all(x["task_id"] in index for x in got) and "broken" in index  # the refused line is listed
    first = next(p.read_text() for p in pages if got[0]["task_id"] in p.read_text())
    assert "overruled" in first and got[0]["rubric"]["criteria"][0]["name"] in first


def test_results_page_says_which_results_share_task_and_rubric(tmp_path, monkeypatch):
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: ScriptedJudge())
    rubrics, out = tmp_path / "rubrics.jsonl", tmp_path / "r.jsonl"
    assert main(["rubrics", str(EXAMPLES / "library-hours-success"), "--out", str(rubrics), "--no-progress", *JUDGE]) == 0
    for copy in ("a", "b"):  # two runs of the same task, scored against the one rubric on file
        shutil.copytree(EXAMPLES / "library-hours-success", tmp_path / copy)
    assert main(["score", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out), "--no-progress", *JUDGE,
                 "--rubrics", str(rubrics)]) == 0
    assert main(["view", str(out), "--out", str(tmp_path / "site")]) == 0
    pages = [p.read_text() for p in (tmp_path / "site" / "r").glob("*.html")]
    assert len(pages) == 2 and all("same task and rubric as 1 other result" in p for p in pages)
