"""`score-dataset --ray` with a rubric file shared by every actor (issue 36 §3): no actor writes a
rubric, every result names the file, and a task missing from it is refused under --rubrics-only."""
from __future__ import annotations

import json

import pytest

ray = pytest.importorskip("ray")

from dist_helpers import judge_settings, write_source

from cua_verifier.cli import main
from serving.perf.loadtest import LoopbackJudge, trajectory
from verifier.config import VerifierConfig
from verifier.stages.rubric import write_line
from verifier.testing import ScriptedJudge

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


async def test_every_actor_scores_against_the_shared_file(cluster, tmp_path):
    src = write_source(tmp_path / "rollouts.jsonl", tasks=4, per_task=2)
    rubrics = tmp_path / "rubrics.jsonl"
    lines = [(await write_line(trajectory(0, f"task-{k}"), VerifierConfig(), ScriptedJudge())).to_json_line()
             for k in range(3)]  # task-3 has none
    rubrics.write_text("".join(lines))
    cfg, out = tmp_path / "cfg.json", tmp_path / "out.jsonl"
    with LoopbackJudge() as judge:
        cfg.write_text(json.dumps({"judge": judge_settings(judge.url)}))
        code = main(["score-dataset", str(src), "--out", str(out), "--config", str(cfg), "--no-progress",
                     "--ray", "local", "--actors", "2", "--actor-cpus", "0.25", "--rubrics", str(rubrics),
                     "--rubrics-only"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert code == 3 and judge.rubric_calls == 0
    scored = [r for r in rows if r["status"] == "scored"]
    refused = [r for r in rows if r["status"] == "unscored"]
    assert len(scored) == 6 and len(refused) == 2
    assert all(r["reason"].startswith("RubricMissingError") for r in refused)
    assert {r["result"]["rubric_source"]["path"] for r in scored} == {str(rubrics)}
    by_task: dict[str, set] = {}
    for r in scored:
        by_task.setdefault(r["result"]["task_id"], set()).add(r["result"]["rubric_source"]["rubric_sha256"])
    assert all(len(v) == 1 for v in by_task.values())
