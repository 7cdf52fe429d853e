"""`score-dataset --ray` keeps the driver out of the data path (issue 21 §5): the actors read the
rows; the driver never opens the source and its memory does not grow with the rows' size."""
from __future__ import annotations

import argparse
import json
import sys
import threading

import pytest

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

from dist_helpers import JudgeProcess, judge_settings, write_inline_source, write_source

from verifier.distributed.ray_backend import run_ray
from verifier.records import ResultWriter
from verifier.settings import RewardSettings

pytestmark = pytest.mark.slow
MB = 2**20
ROWS, TASKS = 8, 4


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


class _Opens:
    """Paths this process opens while `armed` (a `sys.addaudithook` cannot be removed: it idles)."""

    def __init__(self) -> None:
        self.armed, self.paths = False, []
        sys.addaudithook(self)

    def __call__(self, event: str, args: tuple) -> None:
        if self.armed and event == "open" and isinstance(args[0], str):
            self.paths.append(args[0])


def test_driver_never_reads_rows_exactly_once_one_rubric_per_task(cluster, tmp_path):
    src = write_inline_source(tmp_path / "rollouts.jsonl", rows=ROWS, tasks=TASKS, shots=8)
    size = src.stat().st_size
    assert size > 48 * MB, "rows too small for the memory check to mean anything"
    opens, me = _Opens(), psutil.Process()
    peak, stop = [0], threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], me.memory_info().rss)
            stop.wait(0.02)

    with JudgeProcess() as judge:
        settings = RewardSettings(judge=judge_settings(judge.url))
        # a first run of small rows: the driver's one-off growth on its first Ray run (~40 MB:
        # actor handles, gRPC buffers, imports) is the same for any rows, and is not measured
        warm = write_source(tmp_path / "warm.jsonl", tasks=2, per_task=2)
        with ResultWriter(tmp_path / "warm.out.jsonl") as writer:
            assert run_ray(_args(warm, tmp_path / "warm.out.jsonl"), settings, writer)["this_run"]["scored"] == 4
        writer = ResultWriter(tmp_path / "out.jsonl")
        base = me.memory_info().rss
        watcher = threading.Thread(target=sample, daemon=True)
        watcher.start()
        opens.armed = True
        try:
            summary = run_ray(_args(src, tmp_path / "out.jsonl"), settings, writer)
        finally:
            opens.armed = False
            stop.set()
            watcher.join()
            writer.close()
        by_schema = judge.by_schema()
    assert not [p for p in opens.paths if p.startswith(str(src))], "the driver opened the source"
    growth = (peak[0] - base) / MB
    # the old driver loaded and pickled every row: it grew by more than the rows in flight (all of them here)
    assert growth < 16, f"driver RSS grew {growth:.0f} MB over {size / MB:.0f} MB of rows"
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    ids = [r["id"] for r in lines]
    assert sorted(ids) == sorted(f"rollouts.jsonl#{k}" for k in range(ROWS)) and len(set(ids)) == ROWS
    assert all(r["status"] == "scored" for r in lines), [r.get("reason") for r in lines]
    assert summary["this_run"] == {"scored": ROWS, "unscored": 0, "skipped": 0}
    assert summary["ray"]["rows_per_actor"] == [ROWS // 2] * 2  # 2 tasks each (a hash of these ids split 3/1)
    assert by_schema["RubricDraft"] == 2 + TASKS  # two actors, each task's rubric written once per run


def _args(src, out):
    return argparse.Namespace(source=str(src), out=str(out), ray="local", actors=2, actor_cpus=0.25, shard=None,
                              split="train", name=None, id_column=None)
