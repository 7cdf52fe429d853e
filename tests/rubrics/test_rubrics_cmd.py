"""`cua-verifier rubrics` and the scoring entry points reading a rubric file (issue 36 §1-3)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from rubric_helpers import counter_rubric

from cua_verifier.cli import main, score_cmd
from verifier.rubrics import instruction_sha256
from verifier.testing import ScriptedJudge

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "trajectories"
JUDGE = ["--judge-url", "http://127.0.0.1:9/v1", "--model", "judge"]


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.fixture
def writers(monkeypatch):
    """Each run's rubric writer: a scripted judge whose rubrics differ call by call."""
    made: list[ScriptedJudge] = []
    calls: list[int] = []

    def build(args):
        made.append(ScriptedJudge({"rubric": counter_rubric(calls)}, model="writer-model"))
        return made[-1]

    monkeypatch.setattr(score_cmd, "build_judge", build)
    return made


def task_list(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps({"task_id": f"t{i}", "confirmed_task": f"Find item {i} on the shop"})
                              for i in range(3)) + "\n")
    return path


def test_one_rubric_per_task_resumable_exactly_once(tmp_path, writers):
    tasks, out = task_list(tmp_path), tmp_path / "rubrics.jsonl"
    assert main(["rubrics", str(tasks), str(tasks), "--out", str(out), "--no-progress", *JUDGE]) == 0
    got = lines(out)
    assert sorted(x["task_id"] for x in got) == ["t0", "t1", "t2"]  # the task list twice: once per task
    assert all(x["provenance"]["model"] == "writer-model" and x["format_version"] == 1 for x in got)
    assert got[0]["instruction_sha256"] == instruction_sha256(got[0]["instruction"])
    # a crash left a torn line and one task missing: the rerun writes only that task
    text = out.read_text().splitlines()
    out.write_text("\n".join(text[:2]) + "\n" + text[2][:40])
    assert main(["rubrics", str(tasks), "--out", str(out), "--no-progress", *JUDGE]) == 0
    assert len(writers[1].requests) == 1
    assert sorted(x["task_id"] for x in lines(out)) == ["t0", "t1", "t2"]
    assert main(["rubrics", str(tasks), "--out", str(out), "--no-progress", *JUDGE]) == 0
    assert len(writers) == 2  # nothing left to write: no judge built
    assert main(["rubrics", "--check", str(out)]) == 0
    # an instruction edited in the data after its rubric was written: reported, not silently kept
    tasks.write_text(tasks.read_text().replace("Find item 1", "Find item one"))
    assert main(["rubrics", str(tasks), "--out", str(out), "--no-progress", *JUDGE]) == 3
    assert len(lines(out)) == 3


def test_trajectories_give_their_tasks(tmp_path, writers):
    out = tmp_path / "rubrics.jsonl"
    assert main(["rubrics", str(EXAMPLES), "--out", str(out), "--no-progress", *JUDGE]) == 0
    assert len(lines(out)) == len([p for p in EXAMPLES.iterdir() if p.is_dir()])


def test_check_reports_an_overruled_grant_and_errors(tmp_path, writers, capsys):
    tasks, out = task_list(tmp_path), tmp_path / "rubrics.jsonl"
    assert main(["rubrics", str(tasks), "--out", str(out), "--no-progress", *JUDGE]) == 0
    got = lines(out)
    got[0]["rubric"]["permission"] = {"permission": "granted", "permission_quote": "buy it right now please"}
    out.write_text("".join(json.dumps(x) + "\n" for x in got))
    capsys.readouterr()
    assert main(["rubrics", "--check", str(out)]) == 3
    assert "rubrics.jsonl:1: task 't0' field rubric.permission.permission: overruled" in capsys.readouterr().out
    got[1]["rubric"]["criteria"][0]["max_points"] = 40
    out.write_text("".join(json.dumps(x) + "\n" for x in got))
    assert main(["rubrics", "--check", str(out)]) == 2
    assert "rubrics.jsonl:2: task 't1' field rubric.criteria.0.max_points: error" in capsys.readouterr().err


def _score(tmp_path, rubrics: Path, *extra: str, judge: ScriptedJudge, out: str = "r.jsonl"):
    return main(["score", str(EXAMPLES), "--out", str(tmp_path / out), "--no-progress", *JUDGE,
                 "--rubrics", str(rubrics), *extra])


def test_score_uses_the_file_and_records_its_provenance(tmp_path, writers, monkeypatch, capsys):
    rubrics = tmp_path / "rubrics.jsonl"
    assert main(["rubrics", str(EXAMPLES), "--out", str(rubrics), "--no-progress", *JUDGE]) == 0
    scorer = ScriptedJudge()
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: scorer)
    assert _score(tmp_path, rubrics, judge=scorer) == 0
    assert "rubric" not in scorer.stages()
    recs = lines(tmp_path / "r.jsonl")
    sources = [r["result"]["rubric_source"] for r in recs]
    assert {s["kind"] for s in sources} == {"file"} and {s["path"] for s in sources} == {str(rubrics.resolve())}
    assert "rubrics: file" in capsys.readouterr().out


def test_rubrics_only_leaves_an_uncovered_task_unscored(tmp_path, writers, monkeypatch):
    rubrics = tmp_path / "rubrics.jsonl"
    assert main(["rubrics", str(EXAMPLES), "--out", str(rubrics), "--no-progress", *JUDGE]) == 0
    kept = lines(rubrics)[1:]
    rubrics.write_text("".join(json.dumps(x) + "\n" for x in kept))
    scorer = ScriptedJudge()
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: scorer)
    assert _score(tmp_path, rubrics, "--rubrics-only", judge=scorer) == 3
    recs = lines(tmp_path / "r.jsonl")
    unscored = [r for r in recs if r["status"] == "unscored"]
    assert len(unscored) == 1 and unscored[0]["reason"].startswith("RubricMissingError")
    assert unscored[0]["result"] is None and "rubric" not in scorer.stages()
    # without --rubrics-only the uncovered task gets a generated rubric
    assert _score(tmp_path, rubrics, judge=scorer, out="r2.jsonl") == 0
    kinds = sorted(r["result"]["rubric_source"]["kind"] for r in lines(tmp_path / "r2.jsonl"))
    assert kinds == ["file"] * len(kept) + ["generated"]


def test_an_edited_instruction_is_an_error_naming_both(tmp_path, writers, monkeypatch):
    rubrics = tmp_path / "rubrics.jsonl"
    assert main(["rubrics", str(EXAMPLES), "--out", str(rubrics), "--no-progress", *JUDGE]) == 0
    got = lines(rubrics)
    got[0]["instruction"] = "Some other task entirely"
    got[0]["instruction_sha256"] = instruction_sha256(got[0]["instruction"])
    rubrics.write_text("".join(json.dumps(x) + "\n" for x in got))
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: ScriptedJudge())
    assert _score(tmp_path, rubrics, judge=None) == 3
    bad = [r for r in lines(tmp_path / "r.jsonl") if r["status"] == "unscored"]
    assert len(bad) == 1 and bad[0]["reason"].startswith("RubricMismatchError")
    assert "Some other task entirely" in bad[0]["reason"] and got[0]["instruction_sha256"][:16] in bad[0]["reason"]


def test_a_bad_rubric_file_scores_nothing(tmp_path, monkeypatch, capsys):
    rubrics = tmp_path / "rubrics.jsonl"
    rubrics.write_text('{"task_id": "x"}\n')
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: ScriptedJudge())
    assert _score(tmp_path, rubrics, judge=None) == 2
    assert "rubrics.jsonl:1: task 'x' field" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()
