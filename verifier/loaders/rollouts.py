"""Turn what TRL hands a reward function into one `Trajectory` per rollout.

A CUA rollout reaches a TRL reward function in one of three ways (checked in this order):
1. `environments[i]` (GRPOTrainer(environment_factory=...)): the env exposes a `trajectory`
   property/attribute (a `Trajectory`, its JSON dict, or a JSON string), or a `_to_trajectory()` /
   `to_trajectory()` method (TRL turns public env methods into tools, so prefer the first two).
2. Extra per-row fields returned by a `rollout_func`: `trajectory` (same forms), or
   `screenshots` / `actions` / `final_answer` (the screenshot after each action; the first one is the
   initial page when there is one more screenshot than actions).
3. The conversational completion itself: assistant tool calls are the steps, images in tool
   results are the screenshots after each step, images in the prompt are the initial page, and the
   final answer is an answer-tool call or the last assistant text without a tool call.
The task comes from the `task_id` / `task` / `instruction` / `start_url` columns, else from the
prompt's last user text (its hash is the task id, so G rollouts of one prompt share one task).
A row that cannot be converted yields a `TrajectoryError` for that row only. Everything here is
written by the policy, so nothing it writes may raise out of a row: tool-call arguments nested
deeper than `MAX_ARG_DEPTH` (which would otherwise break JSON parsing, hashing and rendering with a
RecursionError or a serialization-depth error) make that row's error, not the batch's.
See reward/README.md for worked examples of each form. (This module was `reward/adapters.py`; it is
a loader, read by the rewards and by `score-dataset` alike, so it sits with the loaders in the core;
`reward.adapters` still names it.)
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from PIL import Image

from verifier.errors import TrajectoryError
from verifier.trajectory import RunStatus, Screenshot, Step, Task, Trajectory

from ..settings import DEFAULT_ANSWER_TOOLS

ANSWER_ARGS = ("answer", "final_answer", "text", "content", "message", "response")
#: Deepest nesting of a tool call's arguments accepted (real tools use a handful of levels).
MAX_ARG_DEPTH = 32


def build_trajectories(prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any], *,
                       answer_tools: Sequence[str] = tuple(DEFAULT_ANSWER_TOOLS),
                       ) -> list[Trajectory | TrajectoryError]:
    """One entry per row: a `Trajectory`, or the `TrajectoryError` explaining why not.

    `answer_tools` defaults to the settings' default, so every caller (reward path, offline
    scoring) reads an answer-tool call the same way unless told otherwise.
    """
    out: list[Trajectory | TrajectoryError] = []
    for i in range(len(completions)):
        try:
            traj = _one(i, prompts[i] if i < len(prompts) else None, completions[i], kwargs, answer_tools)
            check_depth(traj)
            out.append(traj)
        except TrajectoryError as exc:
            out.append(exc)
        except RecursionError:
            out.append(TrajectoryError(f"row {i} is nested too deeply to read"))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            out.append(TrajectoryError(f"cannot build a trajectory from row {i}: {exc}"))
    return out


def nesting_depth(value: Any, limit: int) -> int:
    """Depth of nested dicts/lists in `value` (a scalar is 0), counted without recursion and
    stopping as soon as it passes `limit` (the policy controls the input: no stack, no full walk)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        elif not isinstance(node, (list, tuple)):
            continue
        deepest = max(deepest, depth + 1)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in node)
    return deepest


def check_depth(traj: Trajectory, limit: int = MAX_ARG_DEPTH) -> None:
    """Raise `TrajectoryError` naming the step whose arguments (or the task metadata) are nested
    deeper than `limit`."""
    if nesting_depth(traj.task.metadata, limit) > limit:
        raise TrajectoryError(f"task metadata nested deeper than {limit} levels", field="task.metadata")
    for step in traj.steps:
        if nesting_depth(step.arguments, limit) > limit:
            raise TrajectoryError(f"tool-call arguments nested deeper than {limit} levels",
                                  field=f"steps[{step.index}].arguments")


def _col(kwargs: dict[str, Any], name: str, i: int) -> Any:
    values = kwargs.get(name)
    if values is None or isinstance(values, (str, bytes)) or not hasattr(values, "__getitem__"):
        return None
    return values[i] if i < len(values) else None


def _one(i: int, prompt: Any, completion: Any, kw: dict[str, Any], answer_tools: Sequence[str]) -> Trajectory:
    env = _col(kw, "environments", i)
    if env is not None:
        # a `trajectory` property is preferred: TRL exposes an env's public methods as tools
        if getattr(env, "trajectory", None) is not None:
            return as_trajectory(env.trajectory, field="environments")
        for method in ("_to_trajectory", "to_trajectory"):
            if callable(getattr(env, method, None)):
                return as_trajectory(getattr(env, method)(), field="environments")
    native = _col(kw, "trajectory", i)
    if native is not None:
        return as_trajectory(native, field="trajectory")
    task = task_for_row(prompt, kw, i)
    shots, actions = _col(kw, "screenshots", i), _col(kw, "actions", i)
    if shots is not None or actions is not None:
        return from_fields(task, shots or [], actions or [], _col(kw, "final_answer", i))
    return from_conversation(task, prompt, completion, kw, i, answer_tools)


def as_trajectory(obj: Any, *, field: str) -> Trajectory:
    """A `Trajectory`, its dict, or its JSON string."""
    if isinstance(obj, Trajectory):
        return obj
    try:
        if isinstance(obj, (str, bytes)):
            return Trajectory.model_validate_json(obj)
        if isinstance(obj, dict):
            return Trajectory.model_validate(obj)
    except ValueError as exc:
        raise TrajectoryError(f"not a valid trajectory: {exc}", field=field) from exc
    raise TrajectoryError(f"expected a Trajectory, dict or JSON string, got {type(obj).__name__}",
                          field=field)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")


def _images(content: Any) -> list[Any]:
    if not isinstance(content, list):
        return []
    found = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "image" and part.get("image") is not None:
            found.append(part["image"])
        elif part.get("type") == "image_url":
            url = part.get("image_url")
            found.append(url.get("url") if isinstance(url, dict) else url)
    return found


def task_for_row(prompt: Any, kw: dict[str, Any], i: int) -> Task:
    """The task from dataset columns, else from the prompt's last user message."""
    given = _col(kw, "task", i)
    if isinstance(given, Task):
        return given
    if isinstance(given, dict):
        return Task.model_validate(given)
    instruction = given if isinstance(given, str) else _col(kw, "instruction", i)
    if not instruction:
        if isinstance(prompt, str):
            instruction = prompt
        else:
            users = [m for m in (prompt or []) if isinstance(m, dict) and m.get("role") == "user"]
            instruction = _text(users[-1].get("content")) if users else ""
    if not instruction or not instruction.strip():
        raise TrajectoryError("no task instruction (no task/instruction column, no user text in the prompt)",
                              field="prompt")
    task_id = _col(kw, "task_id", i) or "task-" + hashlib.sha256(instruction.encode()).hexdigest()[:16]
    return Task(id=str(task_id), instruction=instruction.strip(), start_url=_col(kw, "start_url", i))


def to_screenshot(obj: Any, *, step: int, timing: str = "after") -> Screenshot:
    """PIL image, bytes, data URL, file path, `Screenshot`, or a dict with one of those + step/timing."""
    if isinstance(obj, Screenshot):
        return obj
    if isinstance(obj, dict):
        step, timing = int(obj.get("step", step)), obj.get("timing", timing)
        src = next((obj[k] for k in ("image", "bytes", "data_url", "url", "path") if obj.get(k) is not None),
                   None)
        if src is None:
            raise TrajectoryError("screenshot dict has no image/bytes/data_url/path", field="screenshots")
        return to_screenshot(src, step=step, timing=timing)
    if isinstance(obj, Image.Image):
        return Screenshot.from_image(obj, step=step, timing=timing)
    if isinstance(obj, (bytes, bytearray)):
        return Screenshot.from_bytes(bytes(obj), step=step, timing=timing)
    if isinstance(obj, str):
        if obj.startswith("data:"):
            return Screenshot.from_data_url(obj, step=step, timing=timing)
        return Screenshot.from_path(obj, step=step, timing=timing)
    raise TrajectoryError(f"unsupported screenshot type {type(obj).__name__}", field="screenshots")


def _step(index: int, action: Any) -> Step:
    if isinstance(action, Step):
        return action.model_copy(update={"index": index})
    if isinstance(action, str):
        return Step(index=index, action=action)
    if isinstance(action, dict):
        name = action.get("action") or action.get("name") or action.get("type")
        args = action.get("arguments", action.get("args", {}))
        if isinstance(args, str):
            args = _parse_args(args)
        return Step(index=index, action=str(name or "unknown"), arguments=args or {},
                    thought=action.get("thought") or action.get("reasoning"), url=action.get("url"),
                    error=action.get("error"))
    raise TrajectoryError(f"unsupported action type {type(action).__name__}", field="actions")


def from_fields(task: Task, screenshots: Sequence[Any], actions: Sequence[Any],
                final_answer: str | None) -> Trajectory:
    """rollout_func fields: screenshot k shows the screen after action k (0 = initial page if
    there is one more screenshot than actions); dict screenshots may say step/timing themselves."""
    steps = [_step(k, a) for k, a in enumerate(actions, start=1)]
    offset = 0 if len(screenshots) == len(steps) + 1 else 1
    shots = [to_screenshot(s, step=min(k + offset, len(steps))) for k, s in enumerate(screenshots)]
    return Trajectory(task=task, steps=steps, screenshots=shots, final_answer=final_answer,
                      source_format="trl-rollout-fields")


def _parse_args(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict (a JSON string is parsed; unparseable text is kept as "raw")."""
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if raw else {}
    except (TypeError, json.JSONDecodeError):
        return {"raw": str(raw)}
    except RecursionError as exc:  # e.g. '{"a":' * 100_000: the C decoder gives up
        raise TrajectoryError(f"tool-call arguments nested deeper than {MAX_ARG_DEPTH} levels",
                              field="tool_calls.arguments") from exc
    return parsed if isinstance(parsed, dict) else {"value": parsed}


def from_conversation(task: Task, prompt: Any, completion: Any, kw: dict[str, Any], i: int,
                      answer_tools: Sequence[str] = tuple(DEFAULT_ANSWER_TOOLS)) -> Trajectory:
    """Assistant tool calls -> steps; tool-result images -> screenshots after that step.

    The final answer is the (last) answer-tool call if there is one, else the LAST assistant turn
    that is text without a tool call: an agent may think aloud before it is done.
    """
    initial = [img for m in (prompt if isinstance(prompt, list) else []) if isinstance(m, dict)
               for img in _images(m.get("content"))]
    if not initial:  # VLM dataset columns, when TRL did not inject them into the prompt
        col = _col(kw, "images", i) or _col(kw, "image", i)
        initial = list(col) if isinstance(col, (list, tuple)) else ([col] if col is not None else [])
    shots = [to_screenshot(img, step=0) for img in initial]
    if isinstance(completion, str):  # plain-text policy: no actions, the text is the answer
        return Trajectory(task=task, screenshots=shots, final_answer=completion.strip() or None,
                          source_format="trl-text")
    steps: list[Step] = []
    tool_answer: str | None = None
    text_answer: str | None = None
    last_role = None
    for msg in completion or []:
        role = msg.get("role")
        if role == "assistant":
            thought = _text(msg.get("content")).strip() or None
            calls = msg.get("tool_calls") or []
            for call in calls:
                fn = call.get("function", call)
                name, args = str(fn.get("name") or "unknown"), _parse_args(fn.get("arguments"))
                steps.append(Step(index=len(steps) + 1, action=name, arguments=args,
                                  thought=thought if call is calls[0] else None))
                if name in answer_tools:
                    tool_answer = next((str(args[k]) for k in ANSWER_ARGS if k in args), "")
            if not calls and thought is not None:
                text_answer = thought
        elif role == "tool":
            text = _text(msg.get("content"))
            if steps and text.startswith("{'error'"):
                steps[-1] = steps[-1].model_copy(update={"error": text[:500]})
            shots += [to_screenshot(img, step=len(steps)) for img in _images(msg.get("content"))]
        last_role = role
    final_answer = tool_answer if tool_answer is not None else text_answer
    cut_off = last_role == "tool" and final_answer is None  # the tool-iteration budget ran out
    status = RunStatus.step_budget_exhausted if cut_off else RunStatus.finished
    return Trajectory(task=task, steps=steps, screenshots=shots, final_answer=final_answer, status=status,
                      source_format="trl-conversation")
