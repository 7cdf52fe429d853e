"""`bench` end to end on the local parquet fixture: scoring, resume, unscored handling, report."""
from __future__ import annotations

import asyncio
import json

import pytest
from bench_fakes import fail, text_of

from cua_verifier.cli import main
from verifier.bench.dataset import load_split
from verifier.bench.runner import build_meta, report_inputs, results_path, score_all, verifier_fn
from verifier.testing import ScriptedJudge

BB = "fara7b_om2w_browserbase"
SUCCESS_TASKS = {"Do the thing number 0", "Do the thing number 1"}  # what the scripted judge believes


def _voyager(broken=()):
    def answer(messages, model):
        text = text_of(messages)
        task = next(t for t in ("Do the thing number 0", "Do the thing number 1", "Do the thing number 2") if t in text)
        if task in broken:
            return fail("webvoyager")
        return {"reasoning": "scripted", "verdict": "SUCCESS" if task in SUCCESS_TASKS else "NOT SUCCESS"}
    return {"webvoyager": answer}


def test_score_resume_and_report(bench_dir, tmp_path):
    tasks = load_split(BB, data_dir=bench_dir)
    meta = build_meta(tasks, split=BB, source="test")
    (tmp_path / "bench_meta.json").write_text(meta.model_dump_json())
    assert meta.inter_annotator["outcome"].n_items == 3

    judge = ScriptedJudge(_voyager(broken={"Do the thing number 2"}))
    counts = asyncio.run(score_all(tasks, "webvoyager", verifier_fn("webvoyager"), judge, tmp_path, progress=False))
    assert (counts["scored"], counts["unscored"]) == (2, 1)
    lines = [json.loads(x) for x in results_path(tmp_path, "webvoyager").read_text().splitlines()]
    bad = next(x for x in lines if x["status"] == "unscored")
    assert bad["id"] == "Maps--cccc3333" and "JudgeInvalidOutputError" in bad["reason"]

    inp = report_inputs(tmp_path, n_boot=50)
    row = next(r for r in inp.rows if r.verifier == "webvoyager" and r.target == "outcome" and r.label_source == "final")
    assert row.n_unscored == 1 and row.binary.n == 2 and (row.binary.tp, row.binary.fp) == (1, 1)

    # resume: only the unscored task is retried
    judge2 = ScriptedJudge(_voyager())
    counts = asyncio.run(score_all(tasks, "webvoyager", verifier_fn("webvoyager"), judge2, tmp_path, progress=False))
    assert (counts["skipped"], counts["scored"]) == (2, 1) and len(judge2.requests) == 1
    inp = report_inputs(tmp_path, n_boot=50)
    row = next(r for r in inp.rows if r.verifier == "webvoyager" and r.target == "outcome" and r.label_source == "final")
    assert row.n_unscored == 0 and (row.binary.tp, row.binary.fp, row.binary.fn, row.binary.tn) == (1, 1, 0, 1)
    assert inp.usage[0].verifier == "webvoyager" and inp.usage[0].calls_mean == 1.0
    assert any(r.verifier == "uv (dataset, stored)" for r in inp.rows)  # stored verdicts as reference


def test_cli_split_then_from_results(bench_dir, tmp_path, monkeypatch, capsys):
    script = _voyager() | {
        "webjudge_keypoints": lambda m, o: {"key_points": ["do the thing"]},
        "webjudge_relevance": lambda m, o: {"description": "d", "reasoning": "r", "score": 4},
        "webjudge_judgment": lambda m, o: {"thoughts": "t", "status": "failure"},
        "diagnosis_failures": lambda m, o: {"reasoning": "r", "failure_points": [
            {"steps": [1], "error_code": "1.4", "what_happened": "wrong filter"}]},
    }
    fake = ScriptedJudge(script)
    monkeypatch.setattr("verifier.judge.make_judge", lambda config=None: fake)
    out = tmp_path / "run"
    rc = main(["bench", "--split", BB, "--data-dir", str(bench_dir), "--judge-url", "http://127.0.0.1:9/v1",
               "--model", "m", "--verifiers", "uv,webjudge,webvoyager", "--out", str(out), "--no-progress",
               "--n-boot", "50"])
    assert rc == 0
    assert fake.stages().count("webvoyager") == 3 and fake.stages().count("webjudge_judgment") == 3
    assert fake.stages().count("outcome") == 3
    for name in ("report.md", "report.html", "confusion.png", "scatter.png", "taxonomy.png",
                 "results_uv.jsonl", "results_webjudge.jsonl", "bench_meta.json"):
        assert (out / name).exists(), name
    md = (out / "report.md").read_text()
    assert "| uv | process | final adjudicated (UV-informed) | 3 |" in md
    assert "| webjudge | outcome |" in md and "| webvoyager | outcome |" in md and "Judge cost per trajectory" in md
    capsys.readouterr()
    n_calls = len(fake.requests)
    assert main(["bench", "--from-results", str(out), "--n-boot", "50", "--out", str(tmp_path / "again")]) == 0
    assert len(fake.requests) == n_calls  # no judge calls
    assert "webjudge" in capsys.readouterr().out
    assert (tmp_path / "again" / "report.html").exists()


def test_unknown_verifier_rejected():
    with pytest.raises(ValueError, match="unknown verifier"):
        verifier_fn("gpt-judge")


def test_rows_without_screenshots_are_unscored(bench_dir, tmp_path):
    tasks = load_split("internal", data_dir=bench_dir)  # its one row has actions but no screenshots
    judge = ScriptedJudge(_voyager())
    counts = asyncio.run(score_all(tasks, "webvoyager", verifier_fn("webvoyager"), judge, tmp_path, progress=False))
    assert counts["unscored"] == 1 and judge.requests == []
    rec = json.loads(results_path(tmp_path, "webvoyager").read_text())
    assert rec["status"] == "unscored" and "no screenshots" in rec["reason"]


def test_cli_options_reach_the_verifiers(bench_dir, tmp_path, monkeypatch):
    fake = ScriptedJudge(_voyager())
    monkeypatch.setattr("verifier.judge.make_judge", lambda config=None: fake)
    base = ["bench", "--split", BB, "--data-dir", str(bench_dir), "--judge-url", "http://127.0.0.1:9/v1",
            "--model", "m", "--no-progress", "--n-boot", "20"]
    assert main(base + ["--verifiers", "uv", "--uv-config", '{"votes": 2}', "--out", str(tmp_path / "a")]) == 2
    assert fake.requests == []
    assert main(base + ["--verifiers", "webvoyager", "--webvoyager-last-n", "1", "--out", str(tmp_path / "b")]) == 0
    assert [len(ScriptedJudge.images(r)) for r in fake.requests] == [1, 1, 1]


def test_a_crash_on_one_trajectory_is_recorded_not_fatal(bench_dir, tmp_path):
    tasks = load_split(BB, data_dir=bench_dir)

    async def flaky(traj, judge):
        if traj.task.id == "Shop--bbbb2222":
            raise KeyError("bug")
        return await verifier_fn("webvoyager")(traj, judge)

    counts = asyncio.run(score_all(tasks, "webvoyager", flaky, ScriptedJudge(_voyager()), tmp_path, progress=False))
    assert (counts["scored"], counts["unscored"]) == (2, 1)
    recs = {json.loads(x)["id"]: json.loads(x) for x in results_path(tmp_path, "webvoyager").read_text().splitlines()}
    assert recs["Shop--bbbb2222"]["reason"].startswith("KeyError")


def test_from_results_on_a_wrong_folder(tmp_path, capsys):
    assert main(["bench", "--from-results", str(tmp_path)]) == 2
    assert "bench_meta.json" in capsys.readouterr().out
