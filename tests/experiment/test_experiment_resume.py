"""`experiment run` killed mid-run and run again (issue 37 §2): every (arm, repeat, item) ends up
scored exactly once, through the real HTTP judge client against loopback stand-ins; and a user's
own trajectories with a labels CSV, which must cover every run before any call."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from pipeline_helpers import make_traj

from verifier.experiment import ExperimentSpec, ExperimentSpecError, load_items
from verifier.testing.echo_judge import EchoJudgeServer
from verifier.testing.lenient_judge import LenientJudgeServer

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "calibration"


class SlowEcho(EchoJudgeServer):
    def reply_for(self, schema, body):
        time.sleep(0.02)  # long enough to kill the run half way
        return super().reply_for(schema, body)


def _scored_lines(out: Path) -> Counter:
    seen: Counter = Counter()
    for log in (out / "arms").rglob("r*.jsonl"):
        for line in log.read_text().splitlines():
            rec = json.loads(line)
            if rec["status"] == "scored":
                seen[(log.parent.name, log.stem, rec["id"])] += 1
    return seen


@pytest.mark.slow
def test_killed_and_rerun_scores_every_verification_exactly_once(tmp_path):
    with SlowEcho() as echo, LenientJudgeServer() as lenient:
        spec = {"name": "resume", "repeats": 2, "concurrency": 2,
                "labelled": {"calibration": {"suite": str(SUITE), "only": ["O2", "O16", "R8"]}},
                "judge": {"base_urls": [echo.url], "model": "echo"},
                "baseline": {"name": "base"}, "arms": [{"name": "lenient", "judge": {"base_urls": [lenient.url],
                                                                                        "model": "lenient"}}]}
        path = tmp_path / "spec.yaml"
        path.write_text(yaml.safe_dump(spec), encoding="utf-8")
        out = tmp_path / "out"
        cmd = [sys.executable, "-m", "cua_verifier", "experiment", "run", str(path), "--out", str(out), "--no-report"]
        env = {**os.environ, "CUA_JUDGE_URL": ""}
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while sum(_scored_lines(out).values()) < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)  # no chance to clean up: a torn last line at worst
        proc.wait()
        first = _scored_lines(out)
        total = 2 * 2 * 6  # arms x repeats x items
        assert 0 < sum(first.values()) < total
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        final = _scored_lines(out)
        assert len(final) == total and set(final.values()) == {1}  # each exactly once
        line = json.loads((out / "runs.jsonl").read_text().splitlines()[-1])
        assert sum(a["skipped"] for a in line["arms"].values()) == sum(first.values())
        assert sum(a["scored"] for a in line["arms"].values()) == total - sum(first.values())
        assert "judge calls saved" in done.stdout
        rep = subprocess.run([sys.executable, "-m", "cua_verifier", "experiment", "report", str(out), "--no-pages"],
                             cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
        assert rep.returncode == 0 and "lenient" in rep.stdout


def test_trajectories_with_a_labels_csv(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    for k in range(3):
        (runs / f"run{k}.json").write_text(make_traj(2, task_id=f"task-{k}").model_dump_json(), encoding="utf-8")
    labels = tmp_path / "labels.csv"
    header = "task_id,final_human_outcome_label,final_human_process_label\n"
    labels.write_text(header + "task-0,true,true\ntask-1,false,false\n", encoding="utf-8")
    spec = ExperimentSpec.model_validate({"labelled": {"trajectories": {"paths": ["runs"], "labels": "labels.csv"}},
                                          "baseline": {"name": "b"}, "arms": [{"name": "a"}], "folder": tmp_path})
    with pytest.raises(ExperimentSpecError, match="no row for 1 trajectory task id"):
        load_items(spec)
    labels.write_text(header + "task-0,true,true\ntask-1,false,false\ntask-2,true,\n", encoding="utf-8")
    items = load_items(spec)
    assert [(i.label.task_id, i.label.outcome, i.label.process) for i in items] == [
        ("task-0", True, True), ("task-1", False, False), ("task-2", True, None)]
    assert items[0].thunk().traj.task.id == "task-0"


def _bench_folder(root: Path) -> Path:
    """The bench tests' tiny CUAVerifierBench copy (parquet files written on the fly)."""
    import importlib.util

    pytest.importorskip("datasets")
    spec = importlib.util.spec_from_file_location("bench_fixture", ROOT / "tests" / "bench" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_bench_folder(root)


@pytest.mark.parametrize("source", ["final", "uv_blind"])
def test_a_cuaverifierbench_split_as_the_labelled_set(tmp_path, source):
    from verifier.bench.dataset import load_split

    data = _bench_folder(tmp_path / "cuavb")
    spec = ExperimentSpec.model_validate({"labelled": {"bench": {"split": "fara7b_om2w_browserbase",
                                                                 "data_dir": "cuavb", "label_source": source}},
                                          "baseline": {"name": "b"}, "arms": [{"name": "a"}], "folder": tmp_path})
    items = load_items(spec)
    tasks = {t.task_id: t.labels for t in load_split("fara7b_om2w_browserbase", data_dir=data)}
    for it in items:
        h = tasks[it.label.id]
        want = (h.final_outcome, h.final_process) if source == "final" else (
            h.blind_majority_outcome, None if h.blind_median_process_score is None else h.blind_median_process_score >= 0.8)
        assert (it.label.outcome, it.label.process) == want
    assert items and items[0].thunk().traj.task.id == items[0].label.task_id
