"""Task definitions kept outside the trajectory folder.

The reference harness keeps the instruction in a task file, not in the run folder: WebTailBench
uses a TSV (`id`, `task_summary`, `init_url`, ...), Online-Mind2Web a JSON list / JSONL
(`task_id`, `confirmed_task`, `website`, `level`). `lookup_task` reads either and returns the entry
for one task id, normalised to `{"instruction", "start_url", "metadata"}`.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from ..errors import TrajectoryError
from ._common import iter_json_lines, parse_json, read_text

_ID_KEYS = ("id", "task_id")
_INSTRUCTION_KEYS = ("task_summary", "confirmed_task", "instruction", "task")
_URL_KEYS = ("init_url", "start_url", "start_page", "website")


def lookup_task(task_file: str | Path, task_id: str) -> dict[str, Any]:
    """The entry of `task_id` in `task_file` (.tsv, .json or .jsonl); raises if it is absent."""
    path = Path(task_file)
    text = read_text(path, what="task file")
    if path.suffix.lower() == ".tsv":
        rows = list(csv.DictReader(io.StringIO(text), delimiter="\t"))
    elif path.suffix.lower() == ".jsonl":
        rows = [obj for _, obj in iter_json_lines(text, file=str(path), what="task file")]
    else:
        data = parse_json(text, file=str(path), what="task file")
        rows = data if isinstance(data, list) else [data]
    for row in rows:
        if isinstance(row, dict) and any(str(row.get(k)) == task_id for k in _ID_KEYS):
            return normalise_task_entry(row, file=str(path))
    raise TrajectoryError(f"task id {task_id!r} not found", file=str(path))


def normalise_task_entry(row: dict[str, Any], *, file: str) -> dict[str, Any]:
    instruction = next((row[k] for k in _INSTRUCTION_KEYS if isinstance(row.get(k), str) and row[k].strip()),
                       None)
    if instruction is None:
        raise TrajectoryError(f"no instruction (looked for {', '.join(_INSTRUCTION_KEYS)})", file=file)
    start_url = next((row[k] for k in _URL_KEYS if isinstance(row.get(k), str) and row[k].strip()), None)
    metadata = {k: row[k] for k in ("benchmark", "level", "website") if row.get(k) not in (None, "")}
    return {"instruction": instruction.strip(), "start_url": start_url, "metadata": metadata}
