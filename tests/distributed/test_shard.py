"""`--shard I/N`: deterministic, disjoint, complete, and a task's rollouts stay together."""
from __future__ import annotations

import json

import pytest
from dist_helpers import judge_settings, write_source

from cua_verifier.cli import main
from reward.echo_judge import EchoJudgeServer
from serving.reward_service.loadtest import LoopbackJudge
from verifier.distributed.shard import parse_shard, shard_items, stable_bucket
from verifier.errors import ConfigError
from verifier.sources.rows import iter_folder


def test_stable_bucket_is_fixed_across_processes_and_in_range():
    # fixed values: a hash that changed between runs or machines would split tasks differently
    assert [stable_bucket(f"task-{k}", 4) for k in range(6)] == \
        [stable_bucket(f"task-{k}", 4) for k in range(6)]
    assert stable_bucket("task-0", 4) == int.from_bytes(
        __import__("hashlib").sha256(b"task-0").digest()[:8], "big") % 4
    assert {stable_bucket(str(k), 3) for k in range(100)} == {0, 1, 2}


@pytest.mark.parametrize("bad", ["1", "a/b", "4/4", "-1/3", "0/0"])
def test_parse_shard_rejects_bad_specs(bad):
    with pytest.raises(ConfigError, match="--shard"):
        parse_shard(bad)


def test_shards_partition_the_items_by_task(tmp_path):
    src = write_source(tmp_path / "rollouts.jsonl", tasks=5, per_task=3)
    (tmp_path / "rollouts.jsonl").open("a").write("{not json\n")  # a broken line lands in one shard
    all_ids = [rid for rid, _, _ in iter_folder(src)]
    shards = [[(rid, thunk) for rid, _, thunk in shard_items(iter_folder(src), i, 3)] for i in range(3)]
    ids = [rid for shard in shards for rid, _ in shard]
    assert sorted(ids) == sorted(all_ids) and len(ids) == len(set(ids))  # complete and disjoint
    tasks = [{t().task.id for _, t in shard if _loads(t)} for shard in shards]
    assert sum(len(t) for t in tasks) == len(set().union(*tasks)) == 5  # each task in one shard only


def _loads(thunk) -> bool:
    try:
        thunk()
        return True
    except Exception:  # noqa: BLE001
        return False


def test_score_dataset_shards_union_is_the_whole_source_and_rubrics_are_not_repeated(tmp_path):
    src = write_source(tmp_path / "rollouts.jsonl", tasks=4, per_task=2)
    cfg = tmp_path / "cfg.json"
    with LoopbackJudge() as judge:
        cfg.write_text(json.dumps({"judge": judge_settings(judge.url)}))
        for i in range(2):
            assert main(["score-dataset", str(src), "--out", str(tmp_path / f"s{i}.jsonl"), "--shard", f"{i}/2",
                         "--config", str(cfg), "--no-progress"]) == 0
    rows = [json.loads(line) for i in range(2) for line in (tmp_path / f"s{i}.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(f"rollouts.jsonl#{k}" for k in range(8))
    assert all(r["status"] == "scored" for r in rows)
    assert judge.rubric_calls == 4  # each task's rubric written in exactly one shard


def test_shard_is_rejected_cleanly(tmp_path, capsys):
    src = write_source(tmp_path / "r.jsonl", tasks=1, per_task=1)
    with EchoJudgeServer() as judge:
        code = main(["score-dataset", str(src), "--out", str(tmp_path / "o.jsonl"), "--shard", "3/2",
                     "--judge-url", judge.url, "--model", "echo", "--no-progress"])
    assert code == 2 and "--shard" in capsys.readouterr().err
