"""`cua-verifier score`: one record per trajectory, resumable, failures as unscored records."""
import json

import pytest

from verifier.cli import main, score_cmd
from verifier.errors import JudgeUnavailableError
from verifier.testing import ScriptedJudge

pytest.importorskip("verifier.loaders")
pytest.importorskip("verifier.records")


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_score_examples_and_resume(repo_root, tmp_path, monkeypatch):
    examples = repo_root / "examples" / "trajectories"
    if not examples.is_dir():
        pytest.skip("no examples")
    judges = []
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: judges.append(ScriptedJudge()) or judges[-1])
    out = tmp_path / "results.jsonl"
    argv = ["score", str(examples), "--out", str(out), "--no-progress", "--model", "judge",
            "--judge-url", "http://127.0.0.1:9/v1"]
    assert main(argv) == 0
    recs = lines(out)
    n = len(recs)
    assert n >= 1 and all(r["status"] == "scored" for r in recs)
    assert all(r["result"]["schema_version"] == "1.0" and r["result"]["relevance"]["matrix"] for r in recs)
    assert judges[0].closed
    assert main(argv) == 0  # resume: everything already scored
    assert len(lines(out)) == n and judges[1].requests == []


def test_failures_become_unscored_records_and_are_retried(shared_data, tmp_path, monkeypatch):
    traj = shared_data / "trajectories" / "fara-alltrails-find-23"
    bad = tmp_path / "not-a-trajectory.txt"
    bad.write_text("nope")
    out = tmp_path / "r.jsonl"
    judge = ScriptedJudge({"outcome": JudgeUnavailableError("judge down", stage="outcome")})
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: judge)
    assert main(["score", str(traj), str(bad), "--out", str(out), "--no-progress"]) == 3
    recs = {r["id"]: r for r in lines(out)}
    assert {r["status"] for r in recs.values()} == {"unscored"}
    assert "JudgeUnavailableError" in recs[traj.as_posix()]["reason"]
    assert "TrajectoryError" in recs[bad.as_posix()]["reason"]
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: ScriptedJudge())
    assert main(["score", str(traj), "--out", str(out), "--no-progress"]) == 0  # retried, now scored
    assert lines(out)[-1]["status"] == "scored" and lines(out)[-1]["id"] == traj.as_posix()


def test_bad_config_is_a_usage_error(tmp_path, capsys):
    assert main(["score", str(tmp_path), "--out", str(tmp_path / "o.jsonl"), "--votes", "2",
                 "--model", "m", "--judge-url", "http://x/v1"]) == 2
    assert "votes must be odd" in capsys.readouterr().out
