"""Loader for an OSWorld result folder (`lib_run_single.run_single_example`), used by UI-TARS and
most desktop agents run on OSWorld.

Layout: `traj.jsonl` (one row per *executed action*: `step_num`, `action_timestamp`, `action`,
`reward`, `done`, `info`, `screenshot_file`, and in later versions `response`), one screenshot per
row, `result.txt` (the evaluator's score) and often `recording.mp4`. Canonically the folder is
`<action_space>/<observation_type>/<model>/<domain>/<example_id>/`; forks also write flat folders.

Mapping: `step_num` is the agent's turn and repeats when one reply runs several actions, so each
row is one `Step` (the turn's `response`, when logged, is the thought of its first action). Each
screenshot is taken *after* its action and the starting screen is never saved, so row k's
screenshot is `step=k, timing="after"`. `DONE` / `FAIL` are the agent's own claim (kept in
`metadata["agent_claim"]`); `result.txt` is the environment's score (`metadata["env_score"]`), and
it tests whatever the task's evaluator tests, which is not always the user's goal. A run that hit
the time limit ends with an `{"Error": ...}` row and has no `result.txt`: status `aborted`.

Newer OSWorld copies also save the starting screen as `step_0.png` (it becomes the screenshot
before step 1) and the task's text as `instruction.txt`. Without that file the instruction is not in
the result folder: it lives in the task config `evaluation_examples/examples/<domain>/<example_id>.json`,
given by path or as a folder to search (`task_file=`), or as `instruction=`.
"""
from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import TrajectoryError
from ..trajectory import (
    AGENT_CLAIM,
    ENV_SCORE,
    AgentClaim,
    EnvScore,
    RunStatus,
    Screenshot,
    Step,
    Task,
    Trajectory,
)
from ._code_action import parse_code
from ._common import check_screenshots, confine_screenshots, find_folders, iter_json_lines, read_text
from .task_file import resolve_task

#: OSWorld's observation types: the second folder of the canonical layout.
OBSERVATION_TYPES = {"screenshot", "a11y_tree", "screenshot_a11y_tree", "som"}
#: Folders searched below a results root for run folders (canonical depth is 5).
MAX_RUN_DEPTH = 6
_SPECIAL = {"DONE": "done", "FAIL": "fail", "WAIT": "wait"}
#: Written by newer OSWorld copies: the starting screen and the task's instruction.
START_SCREEN, INSTRUCTION_FILE = "step_0.png", "instruction.txt"


def is_osworld_folder(path: Path) -> bool:
    return path.is_dir() and (path / "traj.jsonl").is_file()


def find_osworld_runs(root: Path, *, depth: int = MAX_RUN_DEPTH) -> list[Path]:
    """Every run folder (holding `traj.jsonl`) at most `depth` levels below `root`, sorted."""
    return find_folders(root, is_osworld_folder, depth=depth)


def load_osworld(folder: str | Path, *, task_file: str | Path | None = None, instruction: str | None = None,
                 check_images: bool = True, allow_outside_screenshots: bool = False) -> Trajectory:
    root = Path(os.path.abspath(folder))
    traj_path = root / "traj.jsonl"
    file = str(traj_path)
    rows = list(iter_json_lines(read_text(traj_path, what="traj.jsonl"), file=file, what="traj.jsonl"))

    steps: list[Step] = []
    shots: list[Screenshot] = []
    warnings: list[str] = []
    errors: list[str] = []
    missing: list[int] = []
    turn: Any = object()
    for line, row in rows:
        if not isinstance(row, dict):
            raise TrajectoryError("each line must be a JSON object", file=file, line=line)
        if "Error" in row:
            errors.append(str(row["Error"]))
            continue
        action, args = _action(row.get("action"), file=file, line=line)
        response = row.get("response")
        thought = str(response).strip() or None if response is not None and row.get("step_num") != turn else None
        turn = row.get("step_num")
        steps.append(Step(index=len(steps) + 1, action=action, arguments=args, thought=thought,
                          timestamp=_timestamp(row.get("action_timestamp"))))
        name = row.get("screenshot_file")
        if isinstance(name, str) and name.strip():
            path = root / Path(name.replace("\\", "/")).name
            if path.is_file():
                shots.append(Screenshot.from_path(path, step=len(steps), timing="after"))
                continue
        missing.append(len(steps))
    start = root / START_SCREEN
    if start.is_file():  # newer copies: the screen before the first action
        shots.insert(0, Screenshot.from_path(start, step=1 if steps else 0, timing="before"))
    if missing:
        warnings.append(f"no screenshot after step(s) {', '.join(map(str, missing))} of {len(steps)}")
    confine_screenshots(shots, root, allow_outside=allow_outside_screenshots, file=file)
    if check_images:
        check_screenshots(shots, file=file)

    metadata: dict[str, Any] = {}
    last = steps[-1].action if steps else None
    if last in ("done", "fail"):
        metadata[AGENT_CLAIM] = AgentClaim(success=last == "done", source=f"OSWorld {last.upper()} action").model_dump()
    score = _result(root)
    if score is not None:
        metadata[ENV_SCORE] = EnvScore.of(score, "OSWorld result.txt").model_dump()
    if errors:
        warnings.append(f"the run stopped with an error: {errors[-1][:300]}")
        status = RunStatus.aborted
    else:
        status = RunStatus.finished if last in ("done", "fail") else RunStatus.step_budget_exhausted
    if score is None:
        warnings.append("no result.txt: the environment did not score this run" + (" (it timed out)" if errors else ""))

    layout = _layout(root)
    metadata["osworld"] = layout
    entry = _task(root, layout, task_file, instruction, file)
    task = Task(id=str(entry.get("id") or root.name), instruction=entry["instruction"],
                start_url=entry.get("start_url"), metadata=entry.get("metadata") or {})
    return Trajectory(task=task, steps=steps, screenshots=shots, final_answer=None, status=status,
                      source_format="osworld", source_path=str(root), load_warnings=warnings, metadata=metadata)


def _action(raw: Any, *, file: str, line: int) -> tuple[str, dict[str, Any]]:
    if isinstance(raw, str):
        text = raw.strip()
        if text.upper() in _SPECIAL:
            return _SPECIAL[text.upper()], {}
        if text.startswith("BASH "):  # the OSWorld-Sec-Eval fork's shell tool
            return "bash", {"command": text[5:].strip()}
        if not text:
            raise TrajectoryError("empty action", file=file, line=line, field="action")
        return parse_code(text, default="pyautogui")
    if isinstance(raw, dict):  # computer_13 action space: {"action_type": "CLICK", "parameters": {...}}
        kind = raw.get("action_type")
        if isinstance(kind, str) and kind.strip():
            params = raw.get("parameters")
            args = dict(params) if isinstance(params, dict) else {k: v for k, v in raw.items() if k != "action_type"}
            return _SPECIAL.get(kind.upper(), kind.strip().lower()), args
    raise TrajectoryError(f"unreadable action {str(raw)[:80]!r}", file=file, line=line, field="action")


def _timestamp(value: Any) -> float | None:
    """`20250226@161557` (the VM host's local time, read as UTC: only differences matter)."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.strptime(value, "%Y%m%d@%H%M%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def _result(root: Path) -> float | None:
    path = root / "result.txt"
    if not path.is_file():
        return None
    text = read_text(path, what="result.txt").strip()
    try:
        return float(text)
    except ValueError:
        raise TrajectoryError(f"result.txt must hold a number, got {text[:40]!r}", file=str(path)) from None


def _layout(root: Path) -> dict[str, str | None]:
    """Canonical `<action_space>/<observation_type>/<model>/<domain>/<example_id>`, else flat."""
    parts = root.parts
    if len(parts) >= 5 and parts[-4] in OBSERVATION_TYPES:
        return {"layout": "canonical", "action_space": parts[-5], "observation_type": parts[-4],
                "model": parts[-3], "domain": parts[-2], "example_id": parts[-1]}
    return {"layout": "flat", "example_id": parts[-1], "domain": None}


def _task(root: Path, layout: dict[str, Any], task_file: str | Path | None, instruction: str | None,
          file: str) -> dict[str, Any]:
    why = "OSWorld keeps it in the task config evaluation_examples/examples/<domain>/<example_id>.json"
    saved = root / INSTRUCTION_FILE
    if saved.is_file() and (text := _saved_instruction(saved)):
        own: dict[str, Any] = {"instruction": text, "start_url": None, "metadata": {}}
        return resolve_task(root.name, instruction=instruction, own=own, file=str(saved), why_missing=why)
    if instruction is None and task_file is not None and Path(task_file).is_dir() and layout["layout"] == "flat":
        # a flat fork folder may be named by a timestamp: try its own name, then its parent's
        for guess in (root.name, root.parent.name):
            try:
                return resolve_task(guess, task_file=task_file, file=file, why_missing=why)
            except TrajectoryError:
                continue
    return resolve_task(root.name, instruction=instruction, task_file=task_file, domain=layout.get("domain"),
                        file=file, why_missing=why)


def _saved_instruction(path: Path) -> str | None:
    """The text of `instruction.txt`; a blank one counts as absent (the task config is then needed)."""
    try:
        if not path.read_bytes().strip():
            return None
    except OSError:
        pass  # read_text below names the file and the reason
    return read_text(path, what=INSTRUCTION_FILE).strip()
