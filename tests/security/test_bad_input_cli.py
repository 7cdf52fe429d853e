"""Bad input through the real commands (issue 14, defect 1): one record fails, the run goes on.

A JSON trajectory nested ~100,000 levels deep used to raise `RecursionError` out of the loaders:
`score`, `score-dataset` and `inspect` died with nothing recorded, and every rerun died the same
way. Each command now turns it into one unscored record / one error line naming the file (and the
line for JSONL) and handles the good trajectories beside it.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cua_verifier.cli import build_parser, main, score_cmd
from reward import RewardSettings
from verifier.testing import ScriptedJudge
from verifier.trajectory import Step, Task, Trajectory

DEEP = "[" * 100_000 + "]" * 100_000
JUDGE = ["--judge-url", "http://127.0.0.1:9/v1", "--model", "judge", "--no-progress"]


def good(task_id: str) -> str:
    return Trajectory(task=Task(id=task_id, instruction="find the price"),
                      steps=[Step(index=1, action="click", arguments={"x": 1})], final_answer="$5").to_json()


def runs_folder(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a_bad.json").write_text(DEEP)
    (runs / "b_good.json").write_text(good("good-b"))
    (runs / "c_mixed.jsonl").write_text(DEEP + "\n" + good("good-c") + "\n")
    return runs


def records(path: Path) -> dict[str, dict]:
    return {Path(r["id"]).name: r for r in map(json.loads, path.read_text().splitlines())}


def test_score_records_deep_json_as_unscored_and_scores_the_rest(tmp_path, monkeypatch):
    runs = runs_folder(tmp_path)
    judge = ScriptedJudge()
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: judge)
    out = tmp_path / "r.jsonl"
    assert main(["score", str(runs), "--out", str(out), *JUDGE]) == 3
    recs = records(out)
    assert {k: r["status"] for k, r in recs.items()} == {
        "a_bad.json#0": "unscored", "b_good.json#0": "scored", "c_mixed.jsonl#0": "unscored",
        "c_mixed.jsonl#1": "scored"}
    bad, line = recs["a_bad.json#0"]["reason"], recs["c_mixed.jsonl#0"]["reason"]
    assert bad.startswith("TrajectoryError") and "a_bad.json" in bad and "nested too deeply" in bad
    assert "c_mixed.jsonl:1" in line and "nested too deeply" in line
    assert {r["result"]["task_id"] for r in recs.values() if r["status"] == "scored"} == {"good-b", "good-c"}
    assert main(["score", str(runs), "--out", str(out), *JUDGE]) == 3  # a rerun survives too
    assert len(out.read_text().splitlines()) == 6  # the two bad ones retried, the good ones kept


def test_score_dataset_records_deep_json_as_unscored(tmp_path):
    runs = runs_folder(tmp_path)
    out = tmp_path / "o.jsonl"
    settings = RewardSettings(judge_factory=ScriptedJudge)
    args = build_parser().parse_args(["score-dataset", str(runs), "--out", str(out), "--no-progress"])
    args.func(args, settings=settings)
    recs = records(out)
    assert recs["a_bad.json#0"]["status"] == recs["c_mixed.jsonl#0"]["status"] == "unscored"
    assert "nested too deeply" in recs["a_bad.json#0"]["reason"]
    assert recs["b_good.json#0"]["status"] == recs["c_mixed.jsonl#1"]["status"] == "scored"
    single = tmp_path / "single.jsonl"  # a single-file source whose first line is the bad one
    single.write_text(DEEP + "\n" + good("good-s") + "\n")
    args = build_parser().parse_args(["score-dataset", str(single), "--out", str(tmp_path / "s.jsonl"),
                                      "--no-progress"])
    args.func(args, settings=settings)
    assert {k: r["status"] for k, r in records(tmp_path / "s.jsonl").items()} == {
        "single.jsonl#0": "unscored", "single.jsonl#1": "scored"}


def test_inspect_shows_the_good_trajectory_and_names_the_bad_one(tmp_path, capsys):
    path = tmp_path / "mixed.jsonl"
    path.write_text(DEEP + "\n" + good("good-c") + "\n")
    assert main(["inspect", str(path), "--json"]) == 2
    out = capsys.readouterr()
    shown = [json.loads(x) for x in out.out.splitlines()]
    assert [s["task"]["id"] for s in shown] == ["good-c"]
    assert f"{path}:1" in out.err and "nested too deeply" in out.err
    assert "Traceback" not in out.err


def test_inspect_on_a_folder_with_a_bad_and_a_good_trajectory(tmp_path, capsys):
    runs = runs_folder(tmp_path)
    assert main(["inspect", str(runs), "--json"]) == 2
    out = capsys.readouterr()
    assert sorted(json.loads(x)["task"]["id"] for x in out.out.splitlines()) == ["good-b", "good-c"]
    assert "a_bad.json" in out.err and "nested too deeply" in out.err


@pytest.mark.parametrize("name", ["a.json", "a.jsonl"])
def test_inspect_on_a_single_deep_file_is_an_error_not_a_traceback(tmp_path, capsys, name):
    (tmp_path / name).write_text(DEEP)
    assert main(["inspect", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert "nested too deeply" in err and name in err


def nul_path_record(task_id: str) -> str:
    """A trajectory whose screenshot path holds a NUL byte: the OS raises ValueError on such a name."""
    rec = json.loads(good(task_id))
    rec["screenshots"] = [{"step": 1, "timing": "after", "path": "shot\u0000.png"}]
    return json.dumps(rec)


def test_score_records_a_nul_byte_path_as_unscored_naming_the_field(tmp_path, monkeypatch):
    """Issue 20 §1: a NUL byte in a screenshot path was a traceback out of `score`."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a_nul.json").write_text(nul_path_record("nul"))
    (runs / "b_good.json").write_text(good("good-b"))
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: ScriptedJudge())
    out = tmp_path / "r.jsonl"
    assert main(["score", str(runs), "--out", str(out), *JUDGE]) == 3
    recs = records(out)
    assert recs["b_good.json#0"]["status"] == "scored"
    bad = recs["a_nul.json#0"]
    assert bad["status"] == "unscored"
    assert bad["reason"].startswith("TrajectoryError") and "screenshots.0.path" in bad["reason"]
    assert "NUL" in bad["reason"]


def test_inspect_names_a_nul_byte_path_without_a_traceback(tmp_path, capsys):
    path = tmp_path / "nul.json"
    path.write_text(nul_path_record("nul"))
    assert main(["inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert "screenshots.0.path" in err and "NUL" in err and "Traceback" not in err
