"""`cua-verifier score`: one record per trajectory, resumable, failures as unscored records."""
import json
from pathlib import Path

import pytest

from cua_verifier.cli import main, score_cmd
from verifier.errors import JudgeUnavailableError
from verifier.result import RESULT_SCHEMA_VERSION
from verifier.sources.items import display_path
from verifier.testing import ScriptedJudge

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
    assert all(r["result"]["schema_version"] == RESULT_SCHEMA_VERSION and r["result"]["relevance"]["matrix"] for r in recs)
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
    judge_flags = ["--judge-url", "http://127.0.0.1:9/v1", "--model", "judge"]  # else the demo judge starts
    assert main(["score", str(traj), str(bad), "--out", str(out), "--no-progress", *judge_flags]) == 3
    recs = {r["id"]: r for r in lines(out)}
    assert {r["status"] for r in recs.values()} == {"unscored"}
    assert "JudgeUnavailableError" in recs[display_path(traj)]["reason"]
    assert "TrajectoryError" in recs[display_path(bad)]["reason"]
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: ScriptedJudge())
    assert main(["score", str(traj), "--out", str(out), "--no-progress", *judge_flags]) == 0  # retried
    assert lines(out)[-1]["status"] == "scored" and lines(out)[-1]["id"] == display_path(traj)


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


JUDGE = ["--judge-url", "http://127.0.0.1:9/v1", "--model", "judge", "--no-progress"]


def native(task_id: str) -> str:
    from verifier.trajectory import Task, Trajectory

    return Trajectory(task=Task(id=task_id, instruction="find it"), final_answer="it").to_json()


def test_a_bad_file_or_line_becomes_unscored_and_the_run_goes_on(tmp_path, monkeypatch):
    """One truncated JSONL line, one unparseable file: recorded with their reason, the rest scored."""
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: ScriptedJudge())
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.jsonl").write_text(native("a") + "\n" + native("b")[:50] + "\n")
    (runs / "b.json").write_text("{oops")
    (runs / "c.json").write_text(native("c"))
    out = tmp_path / "r.jsonl"
    assert main(["score", str(runs / "a.jsonl"), str(runs), "--out", str(out), *JUDGE]) == 3
    recs = {Path(r["id"]).name: r for r in lines(out)}
    assert set(recs) == {"a.jsonl#0", "a.jsonl#1", "b.json#0", "c.json#0"}
    assert recs["a.jsonl#0"]["status"] == recs["c.json#0"]["status"] == "scored"
    assert recs["a.jsonl#1"]["status"] == "unscored" and "truncated" in recs["a.jsonl#1"]["reason"]
    assert recs["b.json#0"]["reason"].startswith("TrajectoryError")
    assert len(lines(out)) == 4  # a.jsonl named twice (alone and in its folder): scored once


def test_resume_ids_do_not_depend_on_how_the_path_was_typed(tmp_path, monkeypatch):
    judges = []
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: judges.append(ScriptedJudge()) or judges[-1])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "runs.jsonl").write_text(native("a") + "\n" + native("b") + "\n")
    out = tmp_path / "r.jsonl"
    assert main(["score", "./x", "--out", str(out), *JUDGE]) == 0
    assert sorted(r["id"] for r in lines(out)) == ["x/runs.jsonl#0", "x/runs.jsonl#1"]  # readable
    for typed in (str(tmp_path / "x"), "x/../x", "x/runs.jsonl"):
        assert main(["score", typed, "--out", str(out), *JUDGE]) == 0
        assert judges[-1].requests == [], typed  # everything already scored: nothing re-judged
    assert len(lines(out)) == 2


def test_config_file_formats_and_flags_win(tmp_path, monkeypatch):
    seen = {}

    async def fake_score_all(items, out, judge, config, *, concurrency, progress, **_):
        seen.update(votes=config.votes, top_k=config.top_k, concurrency=concurrency)
        return {"scored": 0, "unscored": 0, "skipped": 0}

    monkeypatch.setattr(score_cmd, "build_judge", lambda args: ScriptedJudge())
    monkeypatch.setattr(score_cmd, "score_all", fake_score_all)
    shaped = tmp_path / "shaped.json"
    shaped.write_text(json.dumps({"verifier": {"votes": 3, "top_k": 2}, "max_concurrency": 2}))
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"votes": 3, "top_k": 2, "max_concurrency": 2}))
    out = str(tmp_path / "o.jsonl")
    for cfg in (shaped, plain):
        assert main(["score", str(tmp_path), "--out", out, "--config", str(cfg), *JUDGE]) == 0
        assert seen == {"votes": 3, "top_k": 2, "concurrency": 2}
        assert main(["score", str(tmp_path), "--out", out, "--config", str(cfg), "--votes", "5",
                     "--top-k", "4", "--concurrency", "7", *JUDGE]) == 0
        assert seen == {"votes": 5, "top_k": 4, "concurrency": 7}  # explicit flags beat the file
    assert main(["score", str(tmp_path), "--out", out, *JUDGE]) == 0
    assert seen["concurrency"] == 4  # neither: the command's default
