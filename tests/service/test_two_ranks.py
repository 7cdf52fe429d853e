"""Two training processes (accelerate, CPU) share one reward service: one rubric per group."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
pytest.importorskip("tokenizers")
httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from service_helpers import LoopbackJudge, Service, env

from reward.testing import build_tiny_policy

HERE = Path(__file__).parent


@pytest.mark.slow
def test_two_accelerate_ranks_one_group_one_rubric_call(tmp_path):
    if shutil.which("accelerate", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("accelerate CLI not installed")
    policy = build_tiny_policy(tmp_path / "policy")
    with LoopbackJudge() as judge, Service(judge.url) as svc:
        cmd = [str(Path(sys.executable).parent / "accelerate"), "launch", "--multi_gpu", "--num_processes", "2",
               "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
               "--main_process_port", "0", str(HERE / "two_rank_train.py"), svc.url, str(policy), str(tmp_path)]
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env(), timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        metrics = httpx.get(f"{svc.url}/metrics").text
    ranks = [json.loads((tmp_path / f"rank{k}.json").read_text()) for k in (0, 1)]
    assert all(r["world_size"] == 2 for r in ranks)
    assert [r["requests"] for r in ranks] == [2, 2]  # each rank sent its half of the group of 4
    assert judge.rubric_calls == 1  # ... and the task's rubric was written once, for both ranks
    assert judge.by_schema["Outcome"] == 4  # every rollout was verified
    assert 'cua_reward_judge_calls_total{stage="rubric"} 1.0' in metrics
    # a real reward (not None: nothing failed), gathered over the whole group, so equal on both ranks
    assert ranks[0]["outcome_mean"] is not None and ranks[0]["outcome_mean"] == ranks[1]["outcome_mean"]
