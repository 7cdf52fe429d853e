"""Task definitions kept outside the trajectory folder.

The reference harness keeps the instruction in a task file, not in the run folder: WebTailBench
uses a TSV (`id`, `task_summary`, `init_url`, ...), Online-Mind2Web a JSON list / JSONL
(`task_id`, `confirmed_task`, `website`, `level`), OSWorld one JSON config per task
(`evaluation_examples/examples/<domain>/<id>.json`: `id`, `instruction`, `snapshot`, ...).
`lookup_task` reads any of them, or searches a folder of OSWorld configs, and returns the entry
for one task id, normalised to `{"instruction", "start_url", "metadata"}` (plus `id` when the
file names its own). `resolve_task` applies the one precedence every loader uses.
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


#: How a user supplies a missing instruction: named in every "no instruction" error.
SUPPLY_HINT = "pass --task-file PATH or --instruction TEXT (API: task_file= / instruction=)"


def resolve_task(task_id: str, *, instruction: str | None = None, task_file: str | Path | None = None,
                 own: dict[str, Any] | None = None, domain: str | None = None, file: str,
                 why_missing: str) -> dict[str, Any]:
    """The task entry of a run: `instruction` (the user's flag) > `own` (the run's own record of
    it) > `task_file` (looked up by `task_id`); none of them raises one line naming both options."""
    if instruction is not None and instruction.strip():
        base = own or {}
        return {"start_url": base.get("start_url"), "metadata": base.get("metadata", {}),
                "instruction": instruction.strip()}
    if own is not None:
        return own
    if task_file is not None:
        return lookup_task(task_file, task_id, domain=domain)
    raise TrajectoryError(f"no task instruction: {why_missing}; {SUPPLY_HINT}", file=file)


def lookup_task(task_file: str | Path, task_id: str, *, domain: str | None = None) -> dict[str, Any]:
    """The entry of `task_id` in `task_file` (.tsv, .json or .jsonl; a folder of OSWorld configs is
    searched for `<domain>/<task_id>.json`, then any `<task_id>.json`); raises if it is absent.

    A .json holding one task object (an OSWorld config) describes the run it was given for and is
    used whatever its id: the run folder's name (a timestamp in some forks) need not match it.
    """
    path = Path(task_file)
    if path.is_dir():
        return _search_folder(path, task_id, domain)
    text = read_text(path, what="task file")
    if path.suffix.lower() == ".tsv":
        rows = list(csv.DictReader(io.StringIO(text), delimiter="\t"))
    elif path.suffix.lower() == ".jsonl":
        rows = [obj for _, obj in iter_json_lines(text, file=str(path), what="task file")]
    else:
        data = parse_json(text, file=str(path), what="task file")
        if isinstance(data, dict) and any(isinstance(data.get(k), str) for k in _INSTRUCTION_KEYS):
            return normalise_task_entry(data, file=str(path))
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
    metadata = {k: row[k] for k in ("benchmark", "level", "website", "snapshot") if row.get(k) not in (None, "")}
    entry: dict[str, Any] = {"instruction": instruction.strip(), "start_url": start_url, "metadata": metadata}
    own_id = next((row[k] for k in _ID_KEYS if isinstance(row.get(k), (str, int)) and str(row[k]).strip()), None)
    if own_id is not None:
        entry["id"] = str(own_id)
    return entry


#: A task folder is searched this deep at most (`evaluation_examples/examples/<domain>/<id>.json`).
_MAX_SEARCH_DEPTH = 4


def _search_folder(root: Path, task_id: str, domain: str | None) -> dict[str, Any]:
    name = f"{task_id}.json"
    candidates = [root / domain / name] if domain else []
    candidates.append(root / name)
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        for depth in range(1, _MAX_SEARCH_DEPTH + 1):
            hits = sorted(root.glob("/".join(["*"] * depth) + "/" + name))
            if hits:
                if len(hits) > 1:
                    raise TrajectoryError(f"task id {task_id!r} matches {len(hits)} configs "
                                          f"({', '.join(str(h.relative_to(root)) for h in hits[:3])}); "
                                          "pass the domain's folder or the config itself", file=str(root))
                found = hits[0]
                break
    if found is None:
        raise TrajectoryError(f"no task config {name} under this folder (searched {_MAX_SEARCH_DEPTH} levels)",
                              file=str(root))
    data = parse_json(read_text(found, what="task config"), file=str(found), what="task config")
    if not isinstance(data, dict):
        raise TrajectoryError("task config must hold a JSON object", file=str(found))
    return normalise_task_entry(data, file=str(found))


#: Keys a trajectory record has and a task-list row does not.
_RUN_KEYS = ("steps", "actions", "action_history", "screenshots", "trajectory", "messages")


def _task_row(row: Any) -> bool:
    return (isinstance(row, dict) and any(isinstance(row.get(k), (str, int)) for k in _ID_KEYS)
            and any(isinstance(row.get(k), str) for k in _INSTRUCTION_KEYS) and not any(k in row for k in _RUN_KEYS))


def read_task_list(path: str | Path) -> list[dict[str, Any]] | None:
    """Every task of a plain task list (.tsv, or .json / .jsonl rows with an id and an instruction and
    no steps), normalised like `lookup_task`'s entries, each with its `id`; None when `path` is not a
    task list (a trajectory file, a folder): `cua-verifier rubrics` reads tasks from both."""
    p = Path(path)
    suffix = p.suffix.lower()
    if not p.is_file() or suffix not in (".tsv", ".json", ".jsonl"):
        return None
    text = read_text(p, what="task file")
    if suffix == ".tsv":
        rows: list[Any] = list(csv.DictReader(io.StringIO(text), delimiter="\t"))
    elif suffix == ".jsonl":
        first = next((line for line in text.splitlines() if line.strip()), "")
        if not first or not _task_row(parse_json(first, file=str(p), what="task file")):
            return None
        rows = [obj for _, obj in iter_json_lines(text, file=str(p), what="task file")]
    else:
        data = parse_json(text, file=str(p), what="task file")
        rows = data if isinstance(data, list) else [data]
    if not rows or not all(_task_row(r) for r in rows):
        return None
    return [normalise_task_entry(r, file=str(p)) for r in rows]
