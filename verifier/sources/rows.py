"""Dataset rows as items to score: local data files and hub datasets, read the same way everywhere.

Why here, below the command line, Ray and publishing: `score-dataset`, its Ray backend and the
dataset publisher must agree on how a source is opened and how each row is named (the resume key
and the join key of the published dataset). They used to import these from the CLI module, so the
library's Ray and publish packages reached up into the command line; now all three read them here.

A row may be a CUAVerifierBench row, a native trajectory record, a row with a `trajectory` column
(JSON), or a TRL-style `prompt`/`completion` row, read exactly as the training reward reads it
(same adapter, same `answer_tools` setting).
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .images import undecoded_images
from .items import Item, iter_path

ID_COLUMNS = ("id", "rollout_id", "trajectory_id", "task_id")
DATA_SUFFIXES = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv", ".arrow": "arrow"}


def _is_native_jsonl(path: Path) -> bool:
    try:
        if path.suffix == ".jsonl":  # the whole first record: with inline screenshots it runs to MBs
            with open(path, encoding="utf-8") as fh:
                text = next((line for line in fh if line.strip()), "")
        else:
            text = path.read_text(encoding="utf-8")
        first = json.loads(text)
    except RecursionError:  # too deep for any reader: the native path records it as unscored
        return True
    except (OSError, ValueError):
        return False
    return isinstance(first, dict) and isinstance(first.get("task"), dict)


def is_run_source(path: Path) -> bool:
    """A folder, a native .json/.jsonl or a browser-use history: read by the loaders, not `datasets`."""
    from ..loaders.browser_use import is_browser_use_file

    return path.is_dir() or (path.is_file() and path.suffix.lower() in (".json", ".jsonl")
                             and (_is_native_jsonl(path) or is_browser_use_file(path)))


def iter_folder(root: Path, outside: bool = False, options: dict[str, Any] | None = None) -> Iterator[Item]:
    """Each trajectory under `root` (or `root` itself), keyed by its path relative to `root`.

    `root` itself (one trajectory folder or file) is keyed by its name (`runs.jsonl#0`), not ".".
    `options`: --task-file / --instruction for formats that do not store the instruction."""
    return iter_path(root, lambda child: (root.resolve().name or ".") if child == root
                     else child.relative_to(root).as_posix(), allow_outside_screenshots=outside,
                     task_options=options)


def row_to_trajectory(row: dict[str, Any], source: str, answer_tools: Sequence[str] | None = None,
                      outside: bool = False) -> Any:
    """A dataset row of any supported shape -> `Trajectory` (prompt/completion rows as the reward reads them)."""
    from ..loaders import load_cuavb_row, load_trajectory

    if "web_surfer_log" in row:
        return load_cuavb_row(row, source=source, allow_outside_screenshots=outside)
    if row.get("trajectory") is not None:
        from ..loaders.rollouts import as_trajectory

        return as_trajectory(row["trajectory"], field="trajectory")
    if "completion" in row and "prompt" in row:
        from ..loaders.rollouts import build_trajectories
        from ..settings import DEFAULT_ANSWER_TOOLS

        tools = DEFAULT_ANSWER_TOOLS if answer_tools is None else answer_tools
        (traj,) = build_trajectories([row["prompt"]], [row["completion"]], {k: [v] for k, v in row.items()},
                                     answer_tools=tools)
        if isinstance(traj, Exception):
            raise traj
        return traj
    return load_trajectory(row, allow_outside_screenshots=outside)


def load_rows(source: str, *, split: str, name: str | None, streaming: bool, undecoded: bool = True) -> Any:
    """A `datasets` (Iterable)Dataset from a local data file or a hub name (images undecoded)."""
    import datasets  # lazy: the `train`/`bench` extras

    path = Path(source)
    try:
        if path.is_file():
            ds = datasets.load_dataset(DATA_SUFFIXES[path.suffix.lower()], data_files=str(path),
                                       split="train", streaming=streaming)
        else:
            ds = datasets.load_dataset(source, name, split=split, streaming=streaming)
    except (OSError, ValueError) as exc:
        # ConnectionError/FileNotFoundError are OSErrors: an unknown name or an offline hub.
        raise ConfigError(f"cannot open dataset source {source!r} (split {split!r}): "
                          f"{type(exc).__name__}: {exc}") from exc
    return undecoded_images(ds) if undecoded else ds  # screenshots as their stored bytes: no PIL decode


def iter_rows(ds: Any, source: str, id_column: str | None,
              answer_tools: Sequence[str] | None = None, outside: bool = False) -> Iterator[Item]:
    seen: dict[str, int] = {}
    for i, row in enumerate(ds):
        col = id_column or next((c for c in ID_COLUMNS if row.get(c) not in (None, "")), None)
        if id_column and row.get(id_column) in (None, ""):
            raise ConfigError(f"row {i} has no value in --id-column {id_column!r}")
        rid = str(row[col]) if col else f"row-{i}"
        n = seen[rid] = seen.get(rid, 0) + 1
        rid = rid if n == 1 else f"{rid}#{n}"  # repeated ids stay distinct, deterministically
        desc = f"{source} row {i}"
        yield rid, desc, partial(row_to_trajectory, row, desc, answer_tools, outside)


def log_path_for(out: Path) -> Path:
    """The durable log: `results.jsonl` itself, or `results.parquet.records.jsonl` beside parquet."""
    return out if out.suffix == ".jsonl" else out.with_name(out.name + ".records.jsonl")
