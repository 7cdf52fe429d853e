"""How many items a scoring run will see, counted before it starts, for a progress bar with a total.

Why counted apart from the items: the items are read lazily (a native JSONL line can be tens of MB
and a folder may hold thousands of runs), so the loop cannot know the total without reading
everything first. Counting only lists folders (the same listing `iter_path` makes), counts the
non-blank lines of native JSONL files in binary chunks, and reads parquet row counts from the
file footer; it never parses a record. Anything it cannot count cheaply makes the total unknown
(`None`: a bar without a total, as before), never wrong.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..errors import TrajectoryError
from .items import run_paths

_CHUNK = 1 << 20


def count_items(paths: Iterable[Path]) -> int | None:
    """The number of items `iter_path` yields for `paths` together, or None when not cheaply known."""
    total = 0
    for root in paths:
        try:
            children = run_paths(root)
        except TrajectoryError:
            total += 1  # one unscored item naming the problem
            continue
        for child in children:
            n = _count_one(child)
            if n is None:
                return None
            total += n
    return total


def _count_one(path: Path) -> int | None:
    from ..loaders import detect_format

    try:
        fmt = detect_format(path)
    except TrajectoryError:
        return 1
    if fmt == "native":
        file = path / "trajectory.json" if path.is_dir() else path
        return _jsonl_lines(file) if file.suffix.lower() == ".jsonl" else _json_records(file)
    if fmt == "cuavb-parquet":
        return _parquet_rows(path)
    return 1  # a run folder or a browser-use history: one trajectory


def _jsonl_lines(path: Path) -> int | None:
    """Non-blank lines (as `iter_native_file` skips blank ones), read in chunks: a line of tens of
    MB is never held whole."""
    n, content = 0, False  # content: the line being read so far holds more than whitespace
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                parts = chunk.split(b"\n")
                for part in parts[:-1]:
                    n += content or bool(part.strip())
                    content = False
                content = content or bool(parts[-1].strip())
    except OSError:
        return None
    return n + content


def _json_records(path: Path) -> int | None:
    """One record for a JSON object; a JSON list would have to be parsed to count, so unknown."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return 1
    return None if head.startswith(b"[") else 1


def _parquet_rows(path: Path) -> int | None:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return None
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except (OSError, ValueError):
        return None
