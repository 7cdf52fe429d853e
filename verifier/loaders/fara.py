"""Loader for the fara / webeval trajectory folder.

Layout: `web_surfer.log` (JSON lines, see `websurfer_log`), exactly one `<task_id>_final_answer.json`
(`final_answer` with "<no_answer>" for none, `is_aborted`, `screenshots`, `is_rel_paths`),
screenshots `screenshot_<k>.png` or Fara-native `screenshot<i>.png`, and optionally `task_data.json`.

Screenshot semantics (see `_common.place_screenshots`): when the numbering starts at 1
(`screenshot_1` ...), screenshot k shows the page *before* action k, as in the reference harness; when
it starts at 0 (Fara-native), screenshot 0 is the initial page and screenshot i the page after action
i, i.e. before action i+1. Either way the page after the last action, when present, is kept as
`step=n, timing="after"`.

The instruction is not stored in the run folder by the reference harness. It is taken, first match
wins, from: the `instruction=` argument, `task_file=` (TSV/JSON/JSONL, see `task_file`),
`task_data.json` (`task_summary`), or `task.json` / `task.txt` in the folder.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..errors import TrajectoryError
from ..trajectory import Screenshot, Task, Trajectory
from ._common import (
    NO_ANSWER,
    answer_or_none,
    check_screenshots,
    confine_screenshots,
    infer_status,
    inside,
    place_screenshots,
    read_json,
    read_text,
)
from .task_file import lookup_task, normalise_task_entry
from .websurfer_log import parse_web_surfer_log

_SHOT_RE = re.compile(r"screenshot_?(\d+)\.(png|jpe?g|webp)$", re.IGNORECASE)


def is_fara_folder(path: Path) -> bool:
    return path.is_dir() and ((path / "web_surfer.log").exists() or any(path.glob("*_final_answer.json")))


def load_fara(folder: str | Path, *, task_file: str | Path | None = None, instruction: str | None = None,
              check_images: bool = True, allow_outside_screenshots: bool = False) -> Trajectory:
    root = Path(os.path.abspath(folder))  # lazy screenshot paths must survive a chdir
    if not root.is_dir():
        raise TrajectoryError("not a directory", file=str(root))
    answer_path = _answer_file(root)
    answer = read_json(answer_path, what="final-answer file")
    if not isinstance(answer, dict):
        raise TrajectoryError("final-answer file must hold a JSON object", file=str(answer_path))
    task_id = re.sub(r"(_final)?_answer$", "", answer_path.stem) or root.name

    log_path = root / "web_surfer.log"
    steps = parse_web_surfer_log(read_text(log_path, what="web_surfer.log"), file=str(log_path))

    final_answer = answer_or_none(answer.get("final_answer", NO_ANSWER), file=str(answer_path))
    aborted = answer.get("is_aborted", False)
    if not isinstance(aborted, bool):
        raise TrajectoryError("must be true or false", file=str(answer_path), field="is_aborted")

    numbered = _screenshots(root, answer, answer_path, allow_outside_screenshots)
    confine_screenshots([shot for _, shot in numbered], root, allow_outside=allow_outside_screenshots,
                        file=str(answer_path))
    first = 0 if numbered and min(n for n, _ in numbered) == 0 else 1
    shots, warnings = place_screenshots(numbered, len(steps), first=first, file=str(root))
    if check_images:
        check_screenshots(shots, file=str(root))

    task = Task(id=task_id, **_task_fields(root, task_id, task_file, instruction))
    return Trajectory(task=task, steps=steps, screenshots=shots, final_answer=final_answer,
                      status=infer_status(aborted=aborted, final_answer=final_answer, steps=steps),
                      source_format="fara", source_path=str(root), load_warnings=warnings)


def _answer_file(root: Path) -> Path:
    found = sorted(root.glob("*_final_answer.json")) or sorted(root.glob("*_answer.json"))
    if not found:
        raise TrajectoryError("missing final-answer file (expected exactly one *_final_answer.json)",
                              file=str(root))
    if len(found) > 1:
        raise TrajectoryError("more than one final-answer file: " + ", ".join(p.name for p in found),
                              file=str(root))
    return found[0]


def _screenshots(root: Path, answer: dict[str, Any], answer_path: Path,
                 allow_outside: bool = False) -> list[tuple[int, Screenshot]]:
    """(number, screenshot) pairs: the answer file's list when it has one, else the folder's files.

    An absolute listed path that does not exist (another machine), or that leads out of a copied run
    folder while the same name lies beside the log, is read from the folder; whatever still leads
    outside it is refused by `confine_screenshots` (unless `allow_outside`).
    """
    listed = answer.get("screenshots")
    if listed:
        if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
            raise TrajectoryError("must be a list of file names", file=str(answer_path), field="screenshots")
        paths = []
        for name in listed:
            p = Path(name)
            if not p.is_absolute():
                p = root / p
            elif not p.exists() or (not allow_outside and not inside(p, root) and (root / p.name).is_file()):
                p = root / p.name  # from another machine, or the original of a copied folder: look beside the log
            paths.append(p)
    else:
        paths = [p for p in sorted(root.iterdir()) if _SHOT_RE.search(p.name)]
    out = []
    for pos, p in enumerate(paths):
        m = _SHOT_RE.search(p.name)
        if not m:
            raise TrajectoryError(f"screenshot name {p.name!r} has no number (expected screenshot_<k>.png)",
                                  file=str(answer_path), field=f"screenshots[{pos}]")
        out.append((int(m.group(1)), Screenshot.from_path(p, step=0, timing="after")))
    return out


def _task_fields(root: Path, task_id: str, task_file: str | Path | None,
                 instruction: str | None) -> dict[str, Any]:
    entry: dict[str, Any] | None = None
    if task_file is not None:
        entry = lookup_task(task_file, task_id)
    else:
        for name in ("task_data.json", "task.json"):
            p = root / name
            if p.exists():
                data = read_json(p, what=name)
                if isinstance(data, dict):
                    try:
                        entry = normalise_task_entry(data, file=str(p))
                        break
                    except TrajectoryError:
                        continue
        if entry is None and (root / "task.txt").exists():
            entry = {"instruction": read_text(root / "task.txt", what="task.txt").strip(),
                     "start_url": None, "metadata": {}}
    if instruction is not None:
        entry = {"start_url": None, "metadata": {}, **(entry or {}), "instruction": instruction}
    if entry is None:
        raise TrajectoryError("no task instruction: pass --task-file PATH or --instruction TEXT (API: "
                              "task_file= / instruction=), or add task_data.json (task_summary) / task.json / "
                              "task.txt to the folder", file=str(root))
    entry.pop("id", None)  # the run's id names the task; a task file's own id only finds it
    return entry
