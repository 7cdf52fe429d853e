"""Loader for the Online-Mind2Web run folder: `result.json` + `trajectory/<i>_full_screenshot.png`.

`result.json` holds `task_id`, `task` (the instruction), `final_result_response`, `action_history`
(one string per action, e.g. `<button> -> CLICK` or `<input> -> TYPE: query`) and `thoughts` (one per
action). Screenshot 0 is the initial page and screenshot i the page after action i (checked on the
real sample: the cookie banner disappears in the screenshot after the "accept" click), so screenshot i
is "before step i+1" and the last one is the final page (`step=n, timing="after"`).

The format has no abort flag, no stop action and no "no answer" marker: an empty or missing
`final_result_response` is read as "never answered", and such a run's status as
`step_budget_exhausted` (it did not stop with an answer).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..errors import TrajectoryError
from ..trajectory import Screenshot, Step, Task, Trajectory
from ._common import (
    answer_or_none,
    check_screenshots,
    confine_screenshots,
    infer_status,
    place_screenshots,
    read_json,
)

_SHOT_RE = re.compile(r"^(\d+)_full_screenshot\.(png|jpe?g|webp)$", re.IGNORECASE)


def is_om2w_folder(path: Path) -> bool:
    return path.is_dir() and (path / "result.json").is_file()


def load_om2w(folder: str | Path, *, check_images: bool = True,
              allow_outside_screenshots: bool = False) -> Trajectory:
    root = Path(os.path.abspath(folder))  # lazy screenshot paths must survive a chdir
    result_path = root / "result.json"
    if not result_path.is_file():
        raise TrajectoryError("missing result.json", file=str(root))
    data = read_json(result_path, what="result.json")
    file = str(result_path)
    if not isinstance(data, dict):
        raise TrajectoryError("result.json must hold a JSON object", file=file)

    instruction = data.get("task") or data.get("confirmed_task")
    if not isinstance(instruction, str) or not instruction.strip():
        raise TrajectoryError("missing or empty task instruction", file=file, field="task")
    history = _string_list(data, "action_history", file)
    thoughts = _string_list(data, "thoughts", file) if data.get("thoughts") is not None else []
    warnings: list[str] = []
    if thoughts and len(thoughts) != len(history):
        warnings.append(f"{len(thoughts)} thoughts for {len(history)} actions (paired by position)")
    steps = [_parse_action(i, text, thoughts[i - 1] if i <= len(thoughts) else None)
             for i, text in enumerate(history, start=1)]

    numbered = _screenshots(root)
    confine_screenshots([shot for _, shot in numbered], root, allow_outside=allow_outside_screenshots,
                        file=str(root / "trajectory"))
    shots, shot_warnings = place_screenshots(numbered, len(steps), first=0, file=str(root / "trajectory"))
    if check_images:
        check_screenshots(shots, file=str(root / "trajectory"))

    answer = answer_or_none(data.get("final_result_response"), file=file, field="final_result_response")
    answer = answer if answer and answer.strip() else None
    start_url = next((data[k] for k in ("init_url", "start_url", "website") if isinstance(data.get(k), str)
                      and data[k].strip()), None)
    task_id = str(data.get("task_id") or root.name)
    metadata = {k: data[k] for k in ("level", "website") if data.get(k)}
    return Trajectory(task=Task(id=task_id, instruction=instruction.strip(), start_url=start_url,
                                metadata=metadata),
                      steps=steps, screenshots=shots, final_answer=answer,
                      status=infer_status(aborted=False, final_answer=answer, steps=steps),
                      source_format="om2w", source_path=str(root), load_warnings=warnings + shot_warnings)


def _string_list(data: dict[str, Any], key: str, file: str) -> list[str]:
    value = data.get(key)
    if value is None:
        raise TrajectoryError("missing", file=file, field=key)
    if not isinstance(value, list):
        raise TrajectoryError("must be a list of strings", file=file, field=key)
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise TrajectoryError(f"must be a string, got {type(item).__name__}", file=file,
                                  field=f"{key}[{i}]")
    return value


def _parse_action(index: int, text: str, thought: str | None) -> Step:
    """`<element> -> OP[: value]` into action `op` with `element` / `value` arguments."""
    element, sep, op = text.rpartition(" -> ")
    if not sep:
        return Step(index=index, action="unparsed", arguments={"text": text}, thought=thought or None)
    name, _, value = op.partition(":")
    args: dict[str, Any] = {"element": element.strip()}
    if value.strip():
        args["value"] = value.strip()
    return Step(index=index, action=name.strip().lower() or "unparsed", arguments=args,
                thought=thought or None)


def _screenshots(root: Path) -> list[tuple[int, Screenshot]]:
    folder = root / "trajectory"
    if not folder.is_dir():
        return []
    return [(int(m.group(1)), Screenshot.from_path(p, step=0, timing="after"))
            for p in sorted(folder.iterdir()) if (m := _SHOT_RE.match(p.name))]
