"""Loader for a BrowserGym / AgentLab experiment folder (WorkArena, WebArena on BrowserGym, AWM).

Layout written by `ExpArgs.run()`: `step_<k>.pkl.gz` (a pickled `StepInfo`: `obs`, `action`,
`reward`, `terminated`, `truncated`, `agent_info`, `task_info`, `profiling`), `screenshot_step_<k>.png`,
`goal_object.pkl.gz` (`[{"type": "text", "text": goal}]`) and `summary_info.json` (`cum_reward`,
`terminated`, `truncated`, `err_msg`, `n_steps`). The pickles are read by `_safe_pickle`, never
by `pickle.load`: a trajectory file is untrusted input.

Mapping: `StepInfo` k holds the observation the agent saw and the action it chose from it, so
screenshot k is "before" step k+1; the last `StepInfo` has `action: None` (the episode ended) and
its screenshot is the final page, "after" the last step. `action` is often the model's whole
reply: the fenced call is the action, the prose the thought (`_code_action`). AgentLab's
GenericAgent stores a bare call as the action and its reasoning in `agent_info.think`
(an `AgentInfo`, or a dict in older runs): that text is the step's thought. The answer is the
last chat message the agent sent to the user after the goal (`send_msg_to_user`). The environment's
score (`cum_reward`) goes to `metadata["env_score"]`, never into the task the judge sees.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..errors import TrajectoryError
from ..trajectory import ENV_SCORE, EnvScore, RunStatus, Screenshot, Step, Task, Trajectory
from ._code_action import parse_code, split_reply
from ._common import check_screenshots, confine_screenshots, place_screenshots, read_json, to_epoch
from ._safe_pickle import GOAL_FILE, load_pickle
from .task_file import resolve_task

_STEP_RE = re.compile(r"^step_(\d+)\.pkl(\.gz)?$")
_SHOT_RE = re.compile(r"^screenshot_step_(\d+)\.(png|jpe?g|webp)$", re.IGNORECASE)
_TASK_RE = re.compile(r"_on_(.+?)(_\d+)?$")


def is_browsergym_folder(path: Path) -> bool:
    return path.is_dir() and ((path / "step_0.pkl.gz").is_file() or (path / "step_0.pkl").is_file())


def load_browsergym(folder: str | Path, *, task_file: str | Path | None = None, instruction: str | None = None,
                    check_images: bool = True, allow_outside_screenshots: bool = False) -> Trajectory:
    root = Path(os.path.abspath(folder))
    if not is_browsergym_folder(root):
        raise TrajectoryError("not a BrowserGym experiment folder (no step_0.pkl.gz)", file=str(root))
    numbered = sorted((int(m.group(1)), p) for p in root.iterdir() if (m := _STEP_RE.match(p.name)))
    if [n for n, _ in numbered] != list(range(len(numbered))):
        raise TrajectoryError("step files are not numbered 0..N without gaps: "
                              + ", ".join(p.name for _, p in numbered[:10]), file=str(root))
    infos = [(p, load_pickle(p, what=p.name)) for _, p in numbered]

    steps: list[Step] = []
    chat: list[Any] = []
    goal_text: str | None = None
    for k, (p, info) in enumerate(infos):
        get = _getter(info, p)
        obs = get("obs") if isinstance(get("obs"), dict) else {}
        messages = obs.get("chat_messages")
        chat = messages if isinstance(messages, list) else chat
        goal_text = goal_text or _goal_text(obs.get("goal_object")) or _goal_text(obs.get("goal"))
        action = get("action")
        if action is None:
            continue  # the episode ended before the agent acted: this record only shows the final page
        if not isinstance(action, str):
            raise TrajectoryError("action must be a string or None", file=str(p), field="action")
        step = _step(len(steps) + 1, action, obs, get("profiling"), _think(get("agent_info")))
        if k + 1 < len(infos):  # an action's error is reported in the next observation
            nxt = _getter(infos[k + 1][1], infos[k + 1][0])("obs")
            error = nxt.get("last_action_error") if isinstance(nxt, dict) else None
            step.error = error.strip() if isinstance(error, str) and error.strip() else None
        steps.append(step)

    shots = [(int(m.group(1)), Screenshot.from_path(p, step=0)) for p in sorted(root.iterdir())
             if (m := _SHOT_RE.match(p.name))]
    confine_screenshots([s for _, s in shots], root, allow_outside=allow_outside_screenshots, file=str(root))
    screenshots, warnings = place_screenshots(shots, len(steps), first=0, file=str(root))
    if check_images:
        check_screenshots(screenshots, file=str(root))

    summary = _summary(root)
    metadata: dict[str, Any] = {}
    rewards = [r for _, info in infos if isinstance(r := _getter(info, root)("reward"), (int, float))]
    if isinstance(summary.get("cum_reward"), (int, float)):
        metadata[ENV_SCORE] = EnvScore.of(summary["cum_reward"], "BrowserGym summary_info.cum_reward").model_dump()
    elif rewards:
        metadata[ENV_SCORE] = EnvScore.of(sum(rewards), "BrowserGym sum of step rewards").model_dump()

    last = _getter(infos[-1][1], infos[-1][0])
    truncated = bool(summary.get("truncated", last("truncated")))
    terminated = bool(summary.get("terminated", last("terminated")))
    if summary.get("err_msg"):
        status = RunStatus.aborted
        warnings.append(f"the run ended with an error: {str(summary['err_msg'])[:300]}")
    elif truncated and not terminated:
        status = RunStatus.step_budget_exhausted
    else:
        status = RunStatus.finished

    task_id = _task_id(root)
    goal_file = root / "goal_object.pkl.gz"
    if goal_file.is_file():
        goal_text = _goal_text(load_pickle(goal_file, what=goal_file.name, allowed=GOAL_FILE)) or goal_text
    own: dict[str, Any] | None = {"instruction": goal_text, "start_url": None, "metadata": {}} if goal_text else None
    entry = resolve_task(task_id, instruction=instruction, task_file=task_file, own=own, file=str(root),
                         why_missing="no goal_object.pkl.gz and no goal in the observations")
    task = Task(id=task_id, instruction=entry["instruction"], start_url=entry.get("start_url"),
                metadata=entry.get("metadata") or {})
    return Trajectory(task=task, steps=steps, screenshots=screenshots, final_answer=_answer(chat, goal_text),
                      status=status, source_format="browsergym", source_path=str(root),
                      load_warnings=warnings, metadata=metadata)


def _getter(info: Any, path: Path) -> Any:
    """Attribute access on a step record (inert `Record`) or a plain dict, whichever the file holds."""
    if isinstance(info, dict):
        return info.get
    if hasattr(info, "get") and hasattr(info, "__dict__"):
        return info.get
    raise TrajectoryError(f"expected a StepInfo record, got {type(info).__name__}", file=str(path))


def _think(agent_info: Any) -> str | None:
    """The agent's reasoning for the step (`AgentInfo.think`, a record or a dict), if it wrote any."""
    think = agent_info.get("think") if hasattr(agent_info, "get") else None
    return think.strip() or None if isinstance(think, str) else None


def _step(index: int, reply: str, obs: dict[str, Any], profiling: Any, think: str | None = None) -> Step:
    code, thought = split_reply(reply)
    if code is None:
        action, args = "unparsed", {"text": reply.strip()}
        thought = None
    else:
        action, args = parse_code(code)
    thought = think or thought
    urls, active = obs.get("open_pages_urls"), obs.get("active_page_index")
    url = obs.get("url") if isinstance(obs.get("url"), str) else None
    if url is None and isinstance(urls, (list, tuple)) and urls:
        pos = _index(active)
        url = str(urls[pos]) if 0 <= pos < len(urls) else str(urls[0])
    start = profiling.get("agent_start") if hasattr(profiling, "get") else None
    return Step(index=index, action=action, arguments=args, thought=thought, url=url,
                timestamp=to_epoch(start) if start else None)


def _index(value: Any) -> int:
    try:
        return int(value[0] if isinstance(value, (list, tuple)) or hasattr(value, "shape") else value)
    except (TypeError, ValueError, IndexError):
        return 0


def _goal_text(goal: Any) -> str | None:
    if isinstance(goal, str):
        return goal.strip() or None
    if isinstance(goal, (list, tuple)):
        parts = [g["text"] for g in goal if isinstance(g, dict) and g.get("type") == "text" and isinstance(g.get("text"), str)]
        return "\n".join(parts).strip() or None
    return None


def _answer(chat: list[Any], goal: str | None) -> str | None:
    """The agent's last message to the user after the user's first message (BrowserGym opens the
    chat with a canned greeting from the assistant, which is not an answer)."""
    messages = [m for m in chat if isinstance(m, dict)]
    first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    if first_user is None:
        return None
    sent = [m.get("message") for m in messages[first_user + 1:]
            if m.get("role") == "assistant" and isinstance(m.get("message"), str)]
    return sent[-1] if sent else None


def _summary(root: Path) -> dict[str, Any]:
    path = root / "summary_info.json"
    if not path.is_file():
        return {}
    data = read_json(path, what="summary_info.json")
    if not isinstance(data, dict):
        raise TrajectoryError("must hold a JSON object", file=str(path))
    return data


def _task_id(root: Path) -> str:
    """`<date>_<agent>_on_<task name>_<seed>` -> the task name with its seed (`workarena...all-menu_4`)."""
    m = _TASK_RE.search(root.name)
    return (m.group(1) + (m.group(2) or "")) if m else root.name
