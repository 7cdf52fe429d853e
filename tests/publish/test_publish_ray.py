"""`score-dataset --ray --publish-dir`: the Ray path publishes the same scored dataset."""
from __future__ import annotations

import json

import pytest

ray = pytest.importorskip("ray")
datasets = pytest.importorskip("datasets")
pq = pytest.importorskip("pyarrow.parquet")

from cua_verifier.cli import main
from serving.perf.loadtest import LoopbackJudge, png, trajectory

pytestmark = pytest.mark.slow


def test_ray_run_publishes_input_columns_and_identical_image_bytes(tmp_path):
    shots = [png((k * 30, 200, 10)) for k in range(6)]
    rows = [{"id": f"r{k}", "trajectory": trajectory(k, f"task-{k % 2}", shot=shots[k]).to_json(),
             "screenshot": {"bytes": shots[k], "path": f"s{k}.png"}} for k in range(6)]
    feats = datasets.Features({"id": datasets.Value("string"), "trajectory": datasets.Value("string"),
                               "screenshot": datasets.Image()})
    src = tmp_path / "rollouts.parquet"
    datasets.Dataset.from_list(rows, features=feats).to_parquet(str(src))
    cfg, pub = tmp_path / "cfg.json", tmp_path / "pub"
    with LoopbackJudge(latency_s=0.01) as judge:
        cfg.write_text(json.dumps({"judge": {"base_urls": [judge.url], "model": "echo"}}))
        argv = ["score-dataset", str(src), "--out", str(tmp_path / "o.parquet"), "--config", str(cfg),
                "--no-progress", "--publish-dir", str(pub)]
        assert main([*argv, "--limit", "3"]) == 0  # a partial local run (one Ray start is enough)
        assert main([*argv, "--ray", "--actors", "2"]) == 0  # resumed on Ray: the other three rows
        assert judge.by_schema["Outcome"] == 6  # no row verified twice
    (shard,) = (pub / "data").glob("train-*.parquet")
    got = pq.read_table(shard).to_pylist()
    assert [r["id"] for r in got] == [r["id"] for r in rows] == [r["uv_id"] for r in got]
    assert [r["screenshot"]["bytes"] for r in got] == shots
    assert all(r["uv_status"] == "scored" and 0.0 <= r["uv_process_score"] <= 1.0 for r in got)
    card = (pub / "README.md").read_text()
    assert "judge_model: echo" in card and "scored: 6" in card
