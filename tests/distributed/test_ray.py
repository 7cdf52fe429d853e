"""`score-dataset --ray` on a local 2-CPU Ray cluster: routing, resume, and an actor killed mid-run."""
from __future__ import annotations

import argparse
import json

import pytest

ray = pytest.importorskip("ray")

from dist_helpers import judge_settings, write_source

from cua_verifier.cli import main
from serving.perf.loadtest import LoopbackJudge
from verifier.distributed.ray_backend import run_ray
from verifier.records import ResultWriter
from verifier.settings import RewardSettings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster():
    psutil = pytest.importorskip("psutil")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
    left = [p for p in psutil.Process().children(recursive=True) if p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE and "ray" in " ".join(p.cmdline())]
    assert not left, f"Ray processes left behind: {[p.cmdline()[:2] for p in left]}"


def _args(src, out, **kw):
    return argparse.Namespace(**{"source": str(src), "out": str(out), "ray": "local", "actors": 2,
                                 "actor_cpus": 0.25, "shard": None, "split": "train", "name": None,
                                 "id_column": None, **kw})


def test_ray_cli_scores_everything_one_rubric_per_task_and_resumes(cluster, tmp_path):
    src = write_source(tmp_path / "rollouts.jsonl", tasks=4, per_task=4)
    cfg = tmp_path / "cfg.json"
    out = tmp_path / "out.jsonl"
    with LoopbackJudge(latency_s=0.02) as judge:
        cfg.write_text(json.dumps({"judge": judge_settings(judge.url)}))
        common = ["--config", str(cfg), "--no-progress", "--ray"]
        assert main(["score-dataset", str(src), "--out", str(out), "--limit", "10", *common, "--actors", "3"]) == 0
        first, first_rubrics = judge.by_schema["Outcome"], judge.rubric_calls
        # resume with another actor count: the tasks are split anew, the rows in the log still skipped
        assert main(["score-dataset", str(src), "--out", str(out), *common, "--actors", "2"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(f"rollouts.jsonl#{k}" for k in range(16))
    assert all(r["status"] == "scored" for r in rows)
    assert first == 10 and judge.by_schema["Outcome"] == 16  # the resumed run only did the other 6
    # 3 then 2 actors, each with its own stage cache: a task's rollouts all went to one actor, so
    # each run (fresh actors) wrote each of the 4 tasks' rubric exactly once
    assert first_rubrics == 4 and judge.rubric_calls == 8


def test_ray_actor_killed_mid_run_rows_retried_none_lost_or_duplicated(cluster, tmp_path):
    src = write_source(tmp_path / "rollouts.jsonl", tasks=3, per_task=6)
    log_path = tmp_path / "out.jsonl"
    killed: list = []

    def kill_first_actor(record, pool):
        if not killed:
            killed.append(pool.actors[0])
            ray.kill(pool.actors[0])

    with LoopbackJudge(latency_s=0.1) as judge:
        settings = RewardSettings(judge=judge_settings(judge.url))
        writer = ResultWriter(log_path)
        try:
            summary = run_ray(_args(src, log_path), settings, writer, on_record=kill_first_actor)
        finally:
            writer.close()
    lines = [json.loads(line) for line in log_path.read_text().splitlines()]
    ids = [r["id"] for r in lines]
    assert sorted(ids) == sorted(f"rollouts.jsonl#{k}" for k in range(18))  # none lost
    assert len(ids) == len(set(ids))  # none written twice
    assert all(r["status"] == "scored" for r in lines)
    assert summary["ray"]["restarts"] == 1 and summary["ray"]["retried"] >= 1
    assert summary["this_run"] == {"scored": 18, "unscored": 0, "skipped": 0}


def test_ray_reads_a_parquet_source_through_ray_data(cluster, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from serving.perf.loadtest import trajectory

    rows = [{"id": f"r{k}", "trajectory": trajectory(k, f"task-{k % 2}").to_json()} for k in range(4)]
    rows.append({"id": "bad", "trajectory": "{not json"})
    src = tmp_path / "rollouts.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src)
    out = tmp_path / "out.jsonl"
    cfg = tmp_path / "cfg.json"
    with LoopbackJudge() as judge:
        cfg.write_text(json.dumps({"judge": judge_settings(judge.url)}))
        assert main(["score-dataset", str(src), "--out", str(out), "--config", str(cfg), "--no-progress",
                     "--ray"]) == 3  # the bad row is unscored: exit 3, as for the local loop
    got = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(got) == {"r0", "r1", "r2", "r3", "bad"}
    assert all(got[f"r{k}"]["status"] == "scored" for k in range(4))
    assert got["bad"]["status"] == "unscored" and "TrajectoryError" in got["bad"]["reason"]
    assert judge.rubric_calls == 2
