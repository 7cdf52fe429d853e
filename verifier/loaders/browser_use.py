"""Loader for browser-use's `AgentHistoryList` JSON (`Agent.save_history()` / `save_to_file()`).

`{"history": [item, ...]}`, one item per agent step. An item holds `model_output` (the model's
reply: its reflection and a list of actions `[{<name>: {...}}]`), `result` (one `ActionResult` per
action that ran: `extracted_content`, `error`, `is_done`, `success`), `state` (url, title, tabs and
the screenshot) and `metadata` (`step_start_time`, ...). What differs between versions:
- up to 0.3.1 the reflection sits under `model_output.current_state`; later it is flat
  (`thinking`, `evaluation_previous_goal`, `memory`, `next_goal`);
- the screenshot is inline base64 in `state.screenshot` (up to 0.5), a file in
  `state.screenshot_path` (0.6 on: an absolute temp path from the machine that ran the agent,
  often Windows, read here from the file of the same name beside the JSON), or absent;
- only from 0.7.11 does an item carry `state_message`, the prompt text holding the task in
  `<user_request>`. Before that the task is not in the file at all (`task_file=` / `instruction=`).

Mapping: each action that ran is one `Step` (an action with no result did not run: a warning).
`state` is the page *before* the item's actions, so item k's screenshot is "before" its first step
and the page after the last action was never saved. The final answer is the last
`extracted_content` of a run that ended with `is_done`; `is_done` / `success` are the agent's own
claim, kept in `metadata["agent_claim"]`, never a verdict. From 0.8 browser-use can run its own LLM
judge on the finished run (`judgement` on the last result: verdict, failure_reason, impossible_task,
reached_captcha); it is kept beside the claim in `metadata["framework_judge"]`, for comparison only.
"""
from __future__ import annotations

import base64
import binascii
import os
import re
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from ..errors import TrajectoryError
from ..trajectory import (
    AGENT_CLAIM,
    FRAMEWORK_JUDGE,
    AgentClaim,
    FrameworkJudgement,
    RunStatus,
    Screenshot,
    Step,
    Task,
    Trajectory,
)
from ._common import check_screenshots, confine_screenshots, inside, read_json, to_epoch
from .task_file import resolve_task

_REFLECTION = (("thinking", "Thinking"), ("evaluation_previous_goal", "Evaluation of previous goal"),
               ("memory", "Memory"), ("next_goal", "Next goal"))
_REQUEST = re.compile(r"<user_request>\s*(.*?)\s*</user_request>", re.DOTALL)
_HEAD = re.compile(rb'^\s*\{\s*"history"\s*:')
#: File stems too generic to name a task: the folder's name is used instead.
_GENERIC = {"agenthistory", "agent_history", "history", "agenthistorylist"}


def is_browser_use_file(path: Path) -> bool:
    """A .json whose top-level object starts with the `history` key (read from its first bytes)."""
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return False
    return bool(_HEAD.match(head.lstrip(b"\xef\xbb\xbf")))


def browser_use_file_in(folder: Path) -> Path | None:
    """The one browser-use history file directly in `folder`, if there is exactly one."""
    try:
        found = [p for p in sorted(folder.glob("*.json")) if is_browser_use_file(p)]
    except OSError:
        return None
    return found[0] if len(found) == 1 else None


def load_browser_use(path: str | Path, *, task_file: str | Path | None = None, instruction: str | None = None,
                     check_images: bool = True, allow_outside_screenshots: bool = False) -> Trajectory:
    p = Path(os.path.abspath(path))
    if p.is_dir():
        found = browser_use_file_in(p)
        if found is None:
            raise TrajectoryError("expected exactly one browser-use history .json in the folder", file=str(p))
        p = found
    file, root = str(p), p.parent
    data = read_json(p, what="browser-use history")
    history = data.get("history") if isinstance(data, dict) else None
    if not isinstance(history, list):
        raise TrajectoryError("expected an object with a 'history' list", file=file, field="history")

    steps: list[Step] = []
    shots: list[tuple[int, Screenshot]] = []  # (index of the step it precedes, 1-based)
    warnings: list[str] = []
    no_shot: list[int] = []
    request: str | None = None
    for k, item in enumerate(history):
        where = f"history[{k}]"
        if not isinstance(item, dict):
            raise TrajectoryError("must be an object", file=file, field=where)
        state = _dict(item.get("state"))
        if request is None and isinstance(item.get("state_message"), str):
            m = _REQUEST.search(item["state_message"])
            request = m.group(1).strip() if m and m.group(1).strip() else None
        shot = _screenshot(state, root, file=file, where=where, warnings=warnings,
                           allow_outside=allow_outside_screenshots)
        if shot is None:
            no_shot.append(k)
        else:
            shots.append((len(steps) + 1, shot))
        steps.extend(_item_steps(item, len(steps), state, file=file, where=where, warnings=warnings))

    n = len(steps)
    screenshots = []
    for before, shot in shots:
        shot.step, shot.timing = (before, "before") if before <= n else (n, "after")
        screenshots.append(shot)
    if no_shot:
        warnings.append(f"no screenshot for history item(s) {', '.join(map(str, no_shot))} (of {len(history)})")
    confine_screenshots(screenshots, root, allow_outside=allow_outside_screenshots, file=file)
    if check_images:
        check_screenshots(screenshots, file=file)

    last = _last_result(history)
    done = bool(last and last.get("is_done"))
    answer = last.get("extracted_content") if done and last else None
    if not done and last and last.get("extracted_content"):
        warnings.append("the run did not end with is_done: its last extracted_content is not taken as an answer")
    metadata: dict[str, Any] = {}
    if done and last:
        success = last.get("success")
        metadata[AGENT_CLAIM] = AgentClaim(success=success if isinstance(success, bool) else None,
                                           source="browser-use result.is_done/success").model_dump()
    if last and (judged := _judgement(last.get("judgement"), file=file, warnings=warnings)) is not None:
        metadata[FRAMEWORK_JUDGE] = judged.model_dump()
    status = RunStatus.finished if done else (
        RunStatus.aborted if last and last.get("error") else RunStatus.step_budget_exhausted)

    task_id = root.name if p.stem.lower() in _GENERIC else p.stem
    own: dict[str, Any] | None = {"instruction": request, "start_url": None, "metadata": {}} if request else None
    entry = resolve_task(task_id, instruction=instruction, task_file=task_file, own=own, file=file,
                         why_missing="browser-use writes the task into the history only from 0.7.11 "
                                     "(state_message)")
    task = Task(id=str(entry.get("id") or task_id), instruction=entry["instruction"],
                start_url=entry.get("start_url"), metadata=entry.get("metadata") or {})
    return Trajectory(task=task, steps=steps, screenshots=screenshots,
                      final_answer=answer if isinstance(answer, str) else None, status=status,
                      source_format="browser-use", source_path=file, load_warnings=warnings, metadata=metadata)


def _item_steps(item: dict[str, Any], before: int, state: dict[str, Any], *, file: str, where: str,
                warnings: list[str]) -> list[Step]:
    output = item.get("model_output")
    results = _list(item.get("result"))
    if not isinstance(output, dict):
        errors = [str(r["error"]) for r in results if isinstance(r, dict) and r.get("error")]
        warnings.append(f"{where}: no model output" + (f" (error: {errors[0][:200]})" if errors else ""))
        return []
    actions = output.get("action")
    if not isinstance(actions, list):
        raise TrajectoryError("must be a list of {name: params} objects", file=file, field=f"{where}.model_output.action")
    reflection = _dict(output.get("current_state")) or output
    thought = "\n".join(f"{label}: {reflection[key]}" for key, label in _REFLECTION
                        if isinstance(reflection.get(key), str) and reflection[key].strip()) or None
    meta = _dict(item.get("metadata"))
    url = state.get("url") if isinstance(state.get("url"), str) else None
    if len(results) < len(actions):
        warnings.append(f"{where}: {len(actions) - len(results)} of {len(actions)} actions did not run")
    steps = []
    for j, (action, result) in enumerate(zip(actions, results)):
        if not isinstance(action, dict) or len(action) != 1:
            raise TrajectoryError("must be one {name: params} object", file=file,
                                  field=f"{where}.model_output.action[{j}]")
        (name, params), = action.items()
        result = _dict(result)
        steps.append(Step(index=before + j + 1, action=str(name) or "unnamed",
                          arguments=params if isinstance(params, dict) else {},
                          thought=thought if j == 0 else None, url=url,
                          timestamp=to_epoch(meta.get("step_start_time")) if j == 0 else None,
                          error=str(result["error"]) if result.get("error") else None))
    return steps


def _screenshot(state: dict[str, Any], root: Path, *, file: str, where: str, warnings: list[str],
                allow_outside: bool) -> Screenshot | None:
    inline = state.get("screenshot")
    if isinstance(inline, str) and inline.strip():
        b64 = inline.split(",", 1)[1] if inline.startswith("data:") else inline
        try:
            return Screenshot.from_bytes(base64.b64decode(b64, validate=True), step=0)
        except (binascii.Error, ValueError):
            raise TrajectoryError("state.screenshot is not valid base64", file=file,
                                  field=f"{where}.state.screenshot") from None
    saved = state.get("screenshot_path")
    if not isinstance(saved, str) or not saved.strip():
        return None
    local = _local_path(saved, root, allow_outside)
    if local is None:
        warnings.append(f"{where}: screenshot {saved!r} not found (nor its file name beside the history)")
        return None
    return Screenshot.from_path(local, step=0)


def _local_path(saved: str, root: Path, allow_outside: bool) -> Path | None:
    """Where to read a saved screenshot: the path itself when it exists and may be read (inside the
    folder, or anywhere with `allow_outside`), else the same file name beside the JSON. A path that
    exists outside with no copy beside the JSON is returned as is, for the confinement check to refuse."""
    windows = "\\" in saved or bool(re.match(r"^[A-Za-z]:", saved))
    name = PureWindowsPath(saved).name if windows else PurePosixPath(saved).name
    own = None if windows else (Path(saved) if Path(saved).is_absolute() else root / saved)
    beside = root / name if name else None
    if own is not None and own.is_file() and (allow_outside or inside(own, root)):
        return own
    if beside is not None and beside.is_file():
        return beside
    return own if own is not None and own.is_file() else None


def _judgement(raw: Any, *, file: str, warnings: list[str]) -> FrameworkJudgement | None:
    """browser-use's own judge verdict (`ActionResult.judgement`), fields of the wrong type dropped."""
    if not isinstance(raw, dict):
        return None
    flags = {k: raw[k] for k in ("verdict", "impossible_task", "reached_captcha") if isinstance(raw.get(k), bool)}
    texts = {k: raw[k].strip() for k in ("reasoning", "failure_reason")
             if isinstance(raw.get(k), str) and raw[k].strip()}
    if not flags and not texts:
        warnings.append("the last result's judgement holds none of verdict, failure_reason, impossible_task, "
                        "reached_captcha: ignored")
        return None
    return FrameworkJudgement(**flags, **texts, source="browser-use result.judgement")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _last_result(history: list[Any]) -> dict[str, Any] | None:
    for item in reversed(history):
        results = item.get("result") if isinstance(item, dict) else None
        if isinstance(results, list) and results and isinstance(results[-1], dict):
            return results[-1]
    return None
