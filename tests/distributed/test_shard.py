"""`--shard I/N` and Ray's actor buckets: deterministic, disjoint, complete, and a task's rollouts
stay together; the actors' buckets are also balanced, and a replacement actor keeps its predecessor's."""
from __future__ import annotations

import json

import pytest
from dist_helpers import judge_settings, write_source

from cua_verifier.cli import main
from reward.echo_judge import EchoJudgeServer
from serving.perf.loadtest import LoopbackJudge
from verifier.distributed.actors import SourceSpec, _next_owned
from verifier.distributed.shard import Balanced, parse_shard, shard_items, stable_bucket
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


def test_balanced_buckets_even_the_rows_where_the_hash_did_not():
    ids = [f"bench-task-{k % 8}" for k in range(40)]  # the Ray benchmark's 40 rows of 8 tasks, interleaved
    by_hash = [sum(stable_bucket(t, 2) == b for t in ids) for b in range(2)]
    assert by_hash == [25, 15]  # what the actors got before: one worked 60% longer than the other
    assign = Balanced(2)
    buckets = [assign(t) for t in ids]
    assert assign.rows == [20, 20]
    assert all(len({b for t2, b in zip(ids, buckets) if t2 == t}) == 1 for t in set(ids))  # a task in one bucket
    again = Balanced(2)
    assert [again(t) for t in ids] == buckets  # same order, same choice: what lets every actor decide alone
    # sorted by task, sizes unequal: a 5, then b c d e f of 1 row, then g of 3 rows (to the emptiest)
    three = Balanced(3)
    for t in ["a"] * 5 + ["b", "c", "d", "e", "f"] + ["g"] * 3:
        three(t)
    assert three.rows == [5, 3, 5]


def _owned(src, index: int, count: int, skip=(), also_skip=()) -> list[str]:
    """The ids actor `index` of `count` takes from `src`, as `ShardReader.run` reads them."""
    it, seen, assign, got = SourceSpec(source=src.name, path=str(src)).items(), set(), Balanced(count), []
    while (item := _next_owned(it, index, assign, None, set(skip), set(also_skip), seen)[0]) is not None:
        got.append(item[0])
    return got


def test_actor_buckets_partition_the_source_by_task_evenly_and_survive_replacement_and_resume(tmp_path):
    src = write_source(tmp_path / "rollouts.jsonl", tasks=6, per_task=3)
    task_of = {rid: thunk().task.id for rid, _, thunk in iter_folder(src)}
    for count in (2, 3, 4):
        buckets = [_owned(src, i, count) for i in range(count)]
        ids = [rid for b in buckets for rid in b]
        assert sorted(ids) == sorted(task_of) and len(ids) == len(set(ids))  # every row on exactly one actor
        tasks = [{task_of[rid] for rid in b} for b in buckets]
        assert sum(map(len, tasks)) == 6  # a task on one actor only
        assert max(map(len, buckets)) - min(map(len, buckets)) <= 3  # within one task's rows
    first = _owned(src, 0, 2)
    # a replacement told which rows its predecessor finished takes the rest of the same bucket
    assert _owned(src, 0, 2, also_skip=first[:2]) == first[2:]
    # resume (with any actor count): rows in the log are skipped, the rest split again
    done = first[:4]
    rest = [_owned(src, i, 3, skip=done) for i in range(3)]
    assert sorted(rid for b in rest for rid in b) == sorted(set(task_of) - set(done))
