"""The results log under faults (issue 14, defect 11; fast, scripted judge).

A corrupt line in the middle of `--out` is skipped and reported (count and line numbers), its
rollout scored again, and the run finishes with the documented exit status; a second run on the
same `--out` while the first holds it fails fast instead of writing every record twice.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cua_verifier.cli import main, score_cmd
from verifier.records import ResultsInUseError, ResultWriter, ScoreRecord
from verifier.testing import ScriptedJudge
from verifier.trajectory import Task, Trajectory

JUDGE = ["--judge-url", "http://127.0.0.1:9/v1", "--model", "judge", "--no-progress"]


def _runs(tmp_path: Path, n: int = 3) -> Path:
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(Trajectory(task=Task(id=f"t{i}", instruction="find it"), final_answer="it")
                            .to_json() + "\n" for i in range(n)))
    return runs


def _lines(path: Path) -> list[dict]:
    out = []
    for x in path.read_text().splitlines():
        try:
            out.append(json.loads(x))
        except ValueError:
            continue
    return out


@pytest.fixture
def scripted(monkeypatch):
    judges: list[ScriptedJudge] = []
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: judges.append(ScriptedJudge()) or judges[-1])
    return judges


def test_corrupt_middle_line_is_skipped_reported_and_rescored(tmp_path, scripted, capsys):
    runs, out = _runs(tmp_path), tmp_path / "r.jsonl"
    assert main(["score", str(runs), "--out", str(out), *JUDGE]) == 0
    text = out.read_text().splitlines(keepends=True)
    lost = json.loads(text[1])["id"]
    out.write_text(text[0] + '{"id": "half a rec\n' + "".join(text[2:]))
    capsys.readouterr()
    assert main(["score", str(runs), "--out", str(out), *JUDGE]) == 0
    err = capsys.readouterr().err
    assert "skipped 1 corrupt line(s) (line 2)" in err and "Traceback" not in err
    ids = [r["id"] for r in _lines(out) if r.get("status") == "scored"]
    assert sorted(ids) == sorted({*ids}) and lost in ids and len(ids) == 3  # the lost one, once


def test_second_run_on_the_same_out_fails_fast(tmp_path, scripted, capsys):
    runs, out = _runs(tmp_path), tmp_path / "r.jsonl"
    holder = ResultWriter(out)
    holder.done_ids()  # a first run has started on this log
    try:
        assert main(["score", str(runs), "--out", str(out), *JUDGE]) == 2
        assert "in use by another scoring run" in capsys.readouterr().err
        assert out.read_text() == "" and scripted == []  # stopped before a judge was even built
    finally:
        holder.close()
    assert main(["score", str(runs), "--out", str(out), *JUDGE]) == 0  # released: runs normally
    assert len(_lines(out)) == 3


def test_lock_holds_across_processes(tmp_path):
    out = tmp_path / "r.jsonl"
    holder = ResultWriter(out)
    holder.write(ScoreRecord(id="a", status="scored", result={}))
    code = textwrap.dedent(f"""
        from verifier.records import ResultWriter, ResultsInUseError
        try:
            ResultWriter({str(out)!r}).done_ids()
        except ResultsInUseError as exc:
            print("locked:", exc)
    """)
    got = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert got.stdout.startswith("locked:"), got.stderr
    holder.close()
    got = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert got.stdout == "" and got.returncode == 0, got.stderr


def test_in_use_is_a_config_error_for_the_cli():
    from verifier.errors import ConfigError

    assert issubclass(ResultsInUseError, ConfigError)


def test_in_use_is_found_before_a_demo_judge_is_started(tmp_path, monkeypatch, capsys):
    import serving.demo as demo_mod

    monkeypatch.delenv("CUA_JUDGE_URL", raising=False)
    started = []
    monkeypatch.setattr(demo_mod, "start_demo_judge", lambda **kw: started.append(kw))
    out = tmp_path / "r.jsonl"
    holder = ResultWriter(out)
    holder.done_ids()
    try:
        assert main(["score", str(_runs(tmp_path)), "--out", str(out), "--no-progress"]) == 2
    finally:
        holder.close()
    assert started == [] and "in use by another scoring run" in capsys.readouterr().err
