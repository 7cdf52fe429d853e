"""What lets every Ray actor read the whole source cheaply: the task id of a row it does not keep
is read from the parsed record (`task_hint`), never by loading it, and agrees with the load."""
from __future__ import annotations

import json
from functools import partial
from types import SimpleNamespace

from dist_helpers import write_source

from serving.perf.loadtest import png, trajectory
from verifier.distributed.shard import keyed, task_hint
from verifier.sources.rows import is_run_source, iter_folder, iter_rows


def test_hint_matches_the_loaded_task_for_native_lines_and_trajectory_columns(tmp_path):
    src = write_source(tmp_path / "r.jsonl", tasks=3, per_task=2)
    items = list(iter_folder(src))
    rows = [{"id": f"x{k}", "trajectory": trajectory(k, f"task-{k % 2}").to_json()} for k in range(3)]
    rows.append({"id": "bad", "trajectory": "{not json"})
    items += list(iter_rows(rows, "rows", None))
    hints = [task_hint(thunk) for _, _, thunk in items]
    assert hints[:-1] == [thunk().task.id for _, _, thunk in items[:-1]]
    assert hints[-1] is None and keyed(items[-1])[1] == "bad"  # unreadable: keyed by its own id


def test_keyed_does_not_load_a_hinted_row(tmp_path):
    loads: list[int] = []

    def load(record: dict) -> SimpleNamespace:
        loads.append(1)
        return SimpleNamespace(task=SimpleNamespace(id="t9"))

    from verifier.loaders import load_native_record

    item = ("r#0", "r", partial(load_native_record, {"task": {"id": "t1", "instruction": "x"}}))
    assert keyed(item) == (item, "t1")
    other = ("r#1", "r", partial(load, {"task": {"id": "t1"}}))  # a kind the hint does not know: loaded
    assert keyed(other)[1] == "t9" and loads == [1]


def test_native_jsonl_with_a_first_line_over_64_kb_is_read_by_the_loaders(tmp_path):
    # a row with inline screenshots is MBs long; only its first 64 KB used to be parsed, which
    # failed, so the file went to the tabular readers instead of the native loader
    big = trajectory(0, "t", shot=png((1, 2, 3), size=(600, 600)) + b"\0" * 100_000).to_json()
    assert len(big) > 1 << 16
    path = tmp_path / "big.jsonl"
    path.write_text(big + "\n" + json.dumps({"task": {"id": "t", "instruction": "y"}}) + "\n")
    assert is_run_source(path)
