"""`cua-verifier score-dataset`: sources, resumability (simulated and real kill), summary."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import reward_fakes

from cua_verifier.cli import build_parser
from reward import RewardSettings
from verifier.records import ResultWriter
from verifier.sources.rows import log_path_for
from verifier.trajectory import Step, Task, Trajectory

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def make_jsonl(path: Path, n: int) -> Path:
    with open(path, "w") as fh:
        for k in range(n):
            t = Trajectory(task=Task(id=f"t{k}", instruction=f"task {k}"),
                           steps=[Step(index=i + 1, action="click") for i in range(k % 4)],
                           final_answer="ok" if k % 2 == 0 else None)
            fh.write(t.to_json() + "\n")
    return path


def settings() -> RewardSettings:
    return RewardSettings(verify_fn=reward_fakes.fake_verify, judge_factory=reward_fakes.fake_judge,
                          cache_factory=None)


def run_cli(argv: list[str], capsys=None) -> int:
    args = build_parser().parse_args(["score-dataset", *argv, "--no-progress"])
    return args.func(args, settings=settings())


def test_native_jsonl_to_parquet_with_summary(tmp_path, capsys):
    pq = pytest.importorskip("pyarrow.parquet")
    src = make_jsonl(tmp_path / "rollouts.jsonl", 6)
    reward_fakes.FAIL_TASKS.add("t5")
    assert run_cli([str(src), "--out", str(tmp_path / "res.parquet"), "--concurrency", "3"]) == 3  # some unscored
    rows = {r["id"]: r for r in pq.read_table(tmp_path / "res.parquet").to_pylist()}
    assert sorted(rows) == [f"rollouts.jsonl#{k}" for k in range(6)]
    assert rows["rollouts.jsonl#2"]["process_score"] == pytest.approx(0.2) and rows["rollouts.jsonl#2"]["outcome_success"] is True
    assert rows["rollouts.jsonl#5"]["status"] == "unscored" and rows["rollouts.jsonl#5"]["reason"].startswith("JudgeUnavailableError")
    out = capsys.readouterr().out
    assert "scored: 5  unscored: 1" in out and "unscored (JudgeUnavailableError): 1" in out


def test_resume_after_partial_run_repeats_nothing_loses_nothing(tmp_path):
    src = make_jsonl(tmp_path / "rollouts.jsonl", 8)
    out = tmp_path / "res.jsonl"
    assert run_cli([str(src), "--out", str(out), "--limit", "3"]) == 0  # "crash" after 3 records
    assert len(reward_fakes.CALLS) == 3
    with open(out, "a") as fh:  # and a torn line from the moment of the crash
        fh.write('{"id": "rollouts.jsonl#3", "status": "sco')
    assert run_cli([str(src), "--out", str(out)]) == 0
    assert sorted(reward_fakes.CALLS) == sorted(f"t{k}" for k in range(8))  # each verified exactly once
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(r["id"] for r in lines) == sorted(f"rollouts.jsonl#{k}" for k in range(8))


def test_unscored_rows_are_retried_on_resume(tmp_path):
    src = make_jsonl(tmp_path / "rollouts.jsonl", 3)
    out = tmp_path / "res.jsonl"
    reward_fakes.FAIL_TASKS.add("t1")
    run_cli([str(src), "--out", str(out)])
    assert ResultWriter(out).done_ids() == {"rollouts.jsonl#0", "rollouts.jsonl#2"}
    reward_fakes.FAIL_TASKS.clear()
    run_cli([str(src), "--out", str(out)])
    assert sorted(reward_fakes.CALLS[:3]) == ["t0", "t1", "t2"] and reward_fakes.CALLS[3:] == ["t1"]
    assert ResultWriter(out).done_ids() == {"rollouts.jsonl#0", "rollouts.jsonl#1", "rollouts.jsonl#2"}


@pytest.mark.parametrize("streaming", [False, True])
def test_dataset_rows_with_trajectory_column_and_ids(tmp_path, streaming):
    datasets = pytest.importorskip("datasets")
    rows = [{"id": f"r{k}", "trajectory": Trajectory(task=Task(id=f"t{k}", instruction="x"),
                                                      final_answer="a").to_json()} for k in range(4)]
    rows.append({"id": "r0", "trajectory": "{broken"})  # repeated id and a bad row
    datasets.Dataset.from_list(rows).to_parquet(tmp_path / "d.parquet")
    flags = ["--streaming"] if streaming else []
    assert run_cli([str(tmp_path / "d.parquet"), "--out", str(tmp_path / "o.jsonl"), *flags]) == 3  # some unscored
    recs = {r.id: r for r in ResultWriter(tmp_path / "o.jsonl").records()}
    assert set(recs) == {"r0", "r1", "r2", "r3", "r0#2"}
    assert recs["r0#2"].status == "unscored" and recs["r0#2"].reason.startswith("TrajectoryError")


def test_folder_of_trajectories(tmp_path):
    for k in range(2):
        d = tmp_path / "runs" / f"run{k}"
        d.mkdir(parents=True)
        (d / "trajectory.json").write_text(Trajectory(task=Task(id=f"f{k}", instruction="x")).to_json())
    (tmp_path / "runs" / "notes.txt").write_text("not a trajectory")
    assert run_cli([str(tmp_path / "runs"), "--out", str(tmp_path / "o.jsonl")]) == 0
    assert ResultWriter(tmp_path / "o.jsonl").done_ids() == {"run0#0", "run1#0"}


def test_bad_out_suffix_and_missing_judge(tmp_path, monkeypatch):
    src = make_jsonl(tmp_path / "r.jsonl", 1)
    assert run_cli([str(src), "--out", str(tmp_path / "o.csv")]) == 2
    for var in ("CUA_JUDGE_URL", "CUA_JUDGE_MODEL", "CUA_VERIFIER_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    args = build_parser().parse_args(["score-dataset", str(src), "--out", str(tmp_path / "o.jsonl")])
    assert args.func(args) == 2  # no judge configured: a clear error, not N unscored rows


def test_real_subprocess_kill_then_resume(tmp_path):
    src = make_jsonl(tmp_path / "rollouts.jsonl", 12)
    out = tmp_path / "res.jsonl"
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"verify_fn": "reward_fakes.fake_verify",
                               "judge_factory": "reward_fakes.fake_judge",
                               "cache_factory": None}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO)]), "FAKE_VERIFY_SLEEP": "0.15"}
    cli = "import sys; from cua_verifier.cli import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", cli, "score-dataset", str(src), "--out", str(out),
                             "--config", str(cfg), "--concurrency", "2", "--no-progress"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline and (not out.exists() or len(out.read_text().splitlines()) < 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = ResultWriter(out).done_ids()
    assert 3 <= len(before) < 12, "the kill should land part way"
    assert run_cli([str(src), "--out", str(out)]) == 0
    # resumed run verified exactly the rollouts the killed one had not finished
    unfinished = {f"rollouts.jsonl#{k}" for k in range(12)} - before
    assert sorted(reward_fakes.CALLS) == sorted(f"t{int(i.split('#')[1])}" for i in unfinished)
    assert ResultWriter(out).done_ids() == {f"rollouts.jsonl#{k}" for k in range(12)}


def test_real_trajectories_folder_through_the_real_pipeline(tmp_path, shared_data):
    """Real fara + Online-Mind2Web runs, real loaders, real pipeline; the judge is scripted."""
    args = build_parser().parse_args(["score-dataset", str(shared_data / "trajectories"), "--out",
                                      str(tmp_path / "o.parquet"), "--no-progress", "--concurrency", "2"])
    s = RewardSettings(judge_factory="verifier.testing.ScriptedJudge")
    assert args.func(args, settings=s) == 3  # two runs lack their instruction (no --task-file given)
    recs = {r.id: r for r in ResultWriter(tmp_path / "o.parquet.records.jsonl").records()}
    # the BrowserGym experiment sits two folders down (sample folder / experiment): found too (issue 35 §5)
    stored_task = {"fara-alltrails-find-23", "om2w-fb7b4f784cfde003e2548fdf4e8d6b4f",
                   "browsergym-workarena-all-menu-4/2024-12-18_12-49-54_DemoAgentArgs_on_workarena.servicenow.all-menu_4"}
    needs_task = {"browser-use-jakkaj-bfcl",
                  "osworld-sec-eval-execute-binary/sec_eval_results/execute_binary/20250226@161539-failed"}
    assert set(recs) == stored_task | needs_task
    assert all(recs[k].status == "scored" for k in stored_task), [r.reason for r in recs.values()]
    assert all(recs[k].status == "unscored" and "--task-file PATH or --instruction TEXT" in recs[k].reason
               for k in needs_task)
    fara = recs["fara-alltrails-find-23"].result
    assert fara["task_id"] and fara["outcome_success"] is True and 0.0 <= fara["process_score"] <= 1.0


def test_cuaverifierbench_style_parquet_rows(tmp_path, shared_data):
    """A CUAVerifierBench-shaped parquet (real fara log + screenshots) read with `datasets`."""
    datasets = pytest.importorskip("datasets")
    run = shared_data / "trajectories" / "fara-alltrails-find-23"
    shots = [{"bytes": (run / f"screenshot_{k}.png").read_bytes(), "path": f"screenshot_{k}.png"}
             for k in range(1, 5)]
    row = {"task_id": "alltrails_find_23", "instruction": "Find waterfalls in the Superstition Mountains",
           "init_url": "https://www.alltrails.com", "final_answer": "<no_answer>", "is_aborted": False,
           "web_surfer_log": (run / "web_surfer.log").read_text(), "screenshots": shots}
    datasets.Dataset.from_list([row]).to_parquet(tmp_path / "cuavb.parquet")
    args = build_parser().parse_args(["score-dataset", str(tmp_path / "cuavb.parquet"), "--out",
                                      str(tmp_path / "o.jsonl"), "--no-progress"])
    assert args.func(args, settings=RewardSettings(judge_factory="verifier.testing.ScriptedJudge")) == 0
    (rec,) = ResultWriter(tmp_path / "o.jsonl").records()
    assert rec.id == "alltrails_find_23" and rec.status == "scored", rec.reason
    assert rec.result["task_id"] == "alltrails_find_23"


def write_prompt_completion_rows(path: Path) -> Path:
    """TRL-style rows, as a rollout_func would dump them: the answer is a `final_answer` tool call."""
    prompt = [{"role": "user", "content": "Find the price of the blue kettle"}]
    completion = [
        {"role": "assistant", "content": "Searching.",
         "tool_calls": [{"type": "function", "function": {"name": "click", "arguments": '{"x": 3}'}}]},
        {"role": "tool", "name": "click", "content": "ok"},
        {"role": "assistant", "content": "",
         "tool_calls": [{"type": "function",
                         "function": {"name": "final_answer", "arguments": '{"answer": "$24.99"}'}}]},
    ]
    path.write_text(json.dumps({"id": "r1", "task_id": "kettle", "prompt": prompt, "completion": completion})
                    + "\n")
    return path


def test_answer_tool_rows_are_read_as_the_reward_reads_them(tmp_path):
    """Offline scoring and the training reward must see the same final answer for one rollout."""
    from verifier.loaders.rollouts import build_trajectories

    src = write_prompt_completion_rows(tmp_path / "rows.jsonl")
    row = json.loads(src.read_text())
    (reward_view,) = build_trajectories([row["prompt"]], [row["completion"]], {"task_id": ["kettle"]},
                                        answer_tools=settings().answer_tools)
    assert reward_view.final_answer == "$24.99"
    assert run_cli([str(src), "--out", str(tmp_path / "o.jsonl")]) == 0
    (rec,) = ResultWriter(tmp_path / "o.jsonl").records()
    assert rec.id == "r1" and rec.status == "scored", rec.reason
    assert rec.result["outcome_reasoning"] == "answer='$24.99'"  # fake_verify echoes the final answer
    # and the settings' answer_tools are honoured offline too, not just a hard-wired default
    args = build_parser().parse_args(["score-dataset", str(src), "--out", str(tmp_path / "p.jsonl"),
                                      "--no-progress"])
    assert args.func(args, settings=settings().model_copy(update={"answer_tools": ["submit"]})) == 0
    (rec,) = ResultWriter(tmp_path / "p.jsonl").records()
    assert rec.result["outcome_reasoning"] == "answer=None"


def test_a_bad_file_or_line_is_an_unscored_record_not_a_crash(tmp_path):
    """A truncated JSONL line and an unreadable file cost themselves only; the run finishes."""
    runs = tmp_path / "runs"
    runs.mkdir()
    good = Trajectory(task=Task(id="good", instruction="x"), final_answer="a").to_json()
    (runs / "a.jsonl").write_text(good + "\n" + good[:40] + "\n")  # killed writer: torn last line
    (runs / "b.json").write_text("{not json")
    (runs / "c.jsonl").write_text(good.replace('"good"', '"good2"') + "\n")
    assert run_cli([str(runs), "--out", str(tmp_path / "o.jsonl")]) == 3  # some unscored
    recs = {r.id: r for r in ResultWriter(tmp_path / "o.jsonl").records()}
    assert set(recs) == {"a.jsonl#0", "a.jsonl#1", "b.json#0", "c.jsonl#0"}
    assert recs["a.jsonl#0"].status == recs["c.jsonl#0"].status == "scored"
    assert recs["a.jsonl#1"].status == "unscored" and "truncated" in recs["a.jsonl#1"].reason
    assert recs["b.json#0"].status == "unscored" and recs["b.json#0"].reason.startswith("TrajectoryError")
    assert sorted(reward_fakes.CALLS) == ["good", "good2"]


def test_a_single_bad_jsonl_file_source_keeps_its_good_records(tmp_path):
    good = Trajectory(task=Task(id="good", instruction="x"), final_answer="a").to_json()
    src = tmp_path / "r.jsonl"
    src.write_text(good + "\n" + good[:40] + "\n")
    assert run_cli([str(src), "--out", str(tmp_path / "o.jsonl")]) == 3  # some unscored
    recs = {r.id: r.status for r in ResultWriter(tmp_path / "o.jsonl").records()}
    assert recs == {"r.jsonl#0": "scored", "r.jsonl#1": "unscored"}


def parsed(argv: list[str]):
    return build_parser().parse_args(["score-dataset", "src", "--out", "o.jsonl", *argv])


def test_config_format_and_flags_win_over_the_file(tmp_path, monkeypatch, capsys):
    from cua_verifier.cli.score_dataset_cmd import build_settings

    for var in ("CUA_JUDGE_URL", "CUA_JUDGE_MODEL", "CUA_VERIFIER_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    shaped = tmp_path / "shaped.json"
    shaped.write_text(json.dumps({"verifier": {"votes": 3}, "judge": {"model": "m", "timeout_s": 30},
                                  "max_concurrency": 2}))
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"votes": 3, "top_k": 2, "max_concurrency": 2}))
    for cfg in (shaped, plain):
        s = build_settings(parsed(["--config", str(cfg)]))
        assert s.verifier["votes"] == 3 and s.max_concurrency == 2
        s = build_settings(parsed(["--config", str(cfg), "--votes", "5", "--top-k", "4", "--concurrency", "7",
                                   "--model", "flag-model"]))
        assert (s.verifier["votes"], s.verifier["top_k"], s.max_concurrency) == (5, 4, 7)
        assert s.judge["model"] == "flag-model"
    assert build_settings(parsed([])).max_concurrency == 8  # neither flag nor file: the command default
    monkeypatch.setenv("CUA_VERIFIER_CONFIG", str(plain))  # the env file takes the same format
    assert RewardSettings.from_env().verifier == {"votes": 3, "top_k": 2}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"votse": 3}))
    args = parsed(["--config", str(bad)])
    assert args.func(args) == 2  # a typo is a usage error, not silently ignored
    assert "votse" in capsys.readouterr().err


def test_both_commands_document_the_same_options():
    from cua_verifier.cli import _options

    for cmd in ("score", "score-dataset"):
        sub = next(a for a in build_parser()._subparsers._group_actions[0].choices.items() if a[0] == cmd)[1]
        text = sub.format_help()
        for flag in ("--config", "--votes", "--top-k", "--concurrency", "--judge-url", "--model"):
            assert flag in text, (cmd, flag)
        assert "Explicit flags win over the file" in " ".join(text.split()), cmd
    assert "plain verifier fields" in _options.CONFIG_HELP


def test_a_failing_writer_stops_the_run_with_its_error_not_a_hang(tmp_path):
    """The shared loop: when records cannot be written (disk full), say so at once."""
    import asyncio

    from verifier.sources.items import score_items

    class FullDisk(ResultWriter):
        def write(self, record):
            raise OSError(28, "No space left on device")

    async def verify_one(traj):
        return {"process_score": 1.0}

    items = ((f"id{k}", "src", lambda: None) for k in range(100))
    with pytest.raises(OSError, match="No space left"):
        asyncio.run(asyncio.wait_for(score_items(items, FullDisk(tmp_path / "o.jsonl"), verify_one,
                                                 concurrency=2, progress=False), timeout=20))


def test_unreachable_dataset_source_is_a_clear_usage_error(tmp_path, monkeypatch, capsys):
    datasets = pytest.importorskip("datasets")

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'org/missing' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    assert run_cli(["org/missing", "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "cannot open dataset source 'org/missing'" in err and "ConnectionError" in err
    assert not (tmp_path / "o.jsonl").exists() or not (tmp_path / "o.jsonl").read_text().strip()


def test_byte_identical_rows_each_keep_their_own_trajectory_id(tmp_path):
    """Issue 38 §8: the session verifies identical content once (its key is the content), and the
    copies' records carried the first copy's `trajectory_id`."""
    from verifier.testing import ScriptedJudge

    line = Trajectory(task=Task(id="same", instruction="find it"), final_answer="it").to_json()
    (tmp_path / "rollouts.jsonl").write_text("\n".join([line] * 3) + "\n")
    out = tmp_path / "res.jsonl"
    real = RewardSettings(judge_factory=ScriptedJudge, cache_factory=None)
    args = build_parser().parse_args(["score-dataset", str(tmp_path / "rollouts.jsonl"), "--out", str(out),
                                      "--no-progress"])
    assert args.func(args, settings=real) == 0
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(records) == 3 and all(r["status"] == "scored" for r in records)
    ids = {r["id"]: r["result"]["trajectory_id"] for r in records}
    assert len(set(ids.values())) == 3, ids  # one verification, three rollouts named as themselves
    assert all(own.endswith(f"rollouts.jsonl:{int(rid.split('#')[1]) + 1}") for rid, own in ids.items()), ids


def _run_and_signal(tmp_path: Path, signals: list[int], n: int = 12) -> tuple[subprocess.CompletedProcess, Path]:
    """score-dataset in a subprocess (fake verify, 0.3 s each, 2 at a time), sent `signals` once
    two records are written."""
    src = make_jsonl(tmp_path / "rollouts.jsonl", n)
    out = tmp_path / "res.jsonl"
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"verify_fn": "reward_fakes.fake_verify", "judge_factory": "reward_fakes.fake_judge",
                               "cache_factory": None}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO)]), "FAKE_VERIFY_SLEEP": "0.3"}
    cli = "import sys; from cua_verifier.cli import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", cli, "score-dataset", str(src), "--out", str(out), "--config",
                             str(cfg), "--concurrency", "2", "--no-progress"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    log = log_path_for(out)
    deadline = time.time() + 30
    while time.time() < deadline and (not log.exists() or len(log.read_text().splitlines()) < 2):
        time.sleep(0.02)
    for sig in signals:
        proc.send_signal(sig)
        time.sleep(0.05)
    stdout, stderr = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_drains_the_rollouts_in_flight_exports_and_says_how_to_resume(tmp_path, sig):
    """Issue 38 §8: SIGTERM stopped score-dataset with no drain and no export; SIGINT printed two
    tracebacks. The first signal now starts nothing new, finishes what is in flight, exports and
    exits 128 + the signal; the rerun does exactly the rest."""
    done, out = _run_and_signal(tmp_path, [sig])
    assert done.returncode == 128 + sig, done.stderr
    assert "Traceback" not in done.stderr and "run the same command to resume" in done.stderr
    written = ResultWriter(log_path_for(out)).done_ids()
    assert len(written) >= 3 and written == {json.loads(x)["id"] for x in out.read_text().splitlines()}
    assert "were finished" in done.stderr and "not started" in done.stdout  # both in flight finished
    assert len(written) < 12
    reward_fakes.CALLS.clear()
    assert run_cli([str(tmp_path / "rollouts.jsonl"), "--out", str(out)]) == 0
    assert sorted(reward_fakes.CALLS) == sorted(f"t{k}" for k in range(12) if f"rollouts.jsonl#{k}" not in written)


def test_a_second_sigint_abandons_the_rollouts_in_flight_without_a_traceback(tmp_path):
    done, out = _run_and_signal(tmp_path, [signal.SIGINT, signal.SIGINT])
    assert done.returncode == 130 and "Traceback" not in done.stderr, done.stderr
    assert "were abandoned" in done.stderr and out.exists()  # what was written is exported all the same
    assert ResultWriter(log_path_for(out)).done_ids() == {json.loads(x)["id"] for x in out.read_text().splitlines()}
