"""`cua-verifier score`: one record per trajectory, resumable, failures as unscored records."""
import json
from pathlib import Path

import pytest

from verifier.cli import main, score_cmd
from verifier.errors import JudgeUnavailableError
from verifier.testing import ScriptedJudge

pytest.importorskip("verifier.loaders")
pytest.importorskip("verifier.records")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "trajectories"


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
    assert "votes must be odd" in capsys.readouterr().err


def test_no_judge_configured_refuses_with_no_demo(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CUA_JUDGE_URL", raising=False)
    assert main(["score", str(EXAMPLES), "--out", str(tmp_path / "o.jsonl"), "--no-demo"]) == 2
    assert "CUA_JUDGE_URL" in capsys.readouterr().err
    assert not (tmp_path / "o.jsonl").exists()


def test_no_judge_configured_starts_the_demo_judge_and_says_so(tmp_path, capsys, monkeypatch):
    """The README's first command: no judge URL -> demo judge, with the warning before and after."""
    import serving.demo as demo_mod
    from reward.echo_judge import EchoJudgeServer

    monkeypatch.delenv("CUA_JUDGE_URL", raising=False)
    monkeypatch.delenv("CUA_JUDGE_MODEL", raising=False)
    server = EchoJudgeServer()
    server.start()
    stopped = []

    class FakeDemo:
        base_url, model, log_path = server.url, "judge", tmp_path / "demo.log"

        def stop(self):
            stopped.append(True)

    monkeypatch.setattr(demo_mod, "start_demo_judge", lambda **kw: FakeDemo())
    try:
        code = main(["score", str(EXAMPLES), "--out", str(tmp_path / "o.jsonl"), "--no-progress"])
    finally:
        server.stop()
    err = capsys.readouterr().err
    assert code == 0, err
    assert err.count(demo_mod.DEMO_WARNING) == 2 and stopped == [True]
    assert server.requests > 0
    lines = (tmp_path / "o.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all('"status":"scored"' in line for line in lines)
