"""Parser for `web_surfer.log` (JSON lines), shared by the fara folder and CUAVerifierBench rows.

Two shapes occur in real logs:
- structured `WebSurferEvent`s: every event with a non-null `action` is one step (`arguments` is the
  tool-argument dict; the agent's `state_description` / `reasoning` / `thoughts` inside it become
  `Step.thought`). `action: null` events are summaries and the final "done" message: skipped.
- text-only `OtherEvent`s from the Fara agent, when no event carries an action:
  "Thought #i: ... Action #i: executing tool 'x' with arguments {json}" (thought and action may be
  in one message or in separate ones); "Observation#i: ..." lines are not steps.
"""
from __future__ import annotations

import json
import re
from typing import Any

from ..errors import TrajectoryError
from ..trajectory import Step
from ._common import check_depth, iter_json_lines, make_step, too_deep

_ACTION_RE = re.compile(r"Action\s*#\s*(\d+)\s*:\s*executing tool\s+'([^']+)'\s+with arguments\s*")
_THOUGHT_RE = re.compile(r"Thought\s*#\s*(\d+)\s*:\s*(.*?)(?=\s*(?:Action|Observation)\s*#\s*\d+\s*:|\Z)",
                         re.DOTALL)


def parse_web_surfer_log(text: str, *, file: str) -> list[Step]:
    """Steps of a `web_surfer.log`, in order, numbered from 1. Errors name file and line."""
    events = list(iter_json_lines(text, file=file, what="web_surfer.log"))
    if not events:
        raise TrajectoryError("web_surfer.log has no events", file=file)
    for line, event in events:
        if not isinstance(event, dict):
            raise TrajectoryError(f"event is a {type(event).__name__}, not an object", file=file, line=line)
    if any(event.get("action") for _, event in events):
        return _structured_steps(events, file)
    return _text_steps(events, file)


def _structured_steps(events: list[tuple[int, dict[str, Any]]], file: str) -> list[Step]:
    steps: list[Step] = []
    for line, event in events:
        if not event.get("action"):
            continue
        if not isinstance(event["action"], str):
            raise TrajectoryError("action must be a string", file=file, line=line, field="action")
        arguments = event.get("arguments")
        if isinstance(arguments, str):  # some writers log the argument dict as a JSON string
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                raise TrajectoryError("arguments is a string that is not a JSON object", file=file,
                                      line=line, field="arguments") from None
            except RecursionError:
                raise too_deep("arguments", file=file, line=line, field="arguments") from None
            check_depth(arguments, file=file, what="arguments", line=line)
        steps.append(make_step(len(steps) + 1, event["action"], arguments, url=event.get("url"),
                               timestamp=event.get("timestamp"), error=event.get("error"),
                               file=file, line=line))
    return steps


def _text_steps(events: list[tuple[int, dict[str, Any]]], file: str) -> list[Step]:
    """Rebuild steps from the Fara agent's debug strings, keyed by the number after '#'."""
    thoughts: dict[int, str] = {}
    actions: dict[int, tuple[str, dict[str, Any], int, Any]] = {}
    for line, event in events:
        message = event.get("message")
        if not isinstance(message, str):
            continue
        for m in _THOUGHT_RE.finditer(message):
            if m.group(2).strip():
                thoughts[int(m.group(1))] = m.group(2).strip()
        for m in _ACTION_RE.finditer(message):
            try:
                args, _ = json.JSONDecoder().raw_decode(message, m.end())
            except json.JSONDecodeError as exc:
                raise TrajectoryError(f"arguments of action #{m.group(1)} are not valid JSON ({exc.msg})",
                                      file=file, line=line, field="message") from None
            except RecursionError:
                raise too_deep(f"arguments of action #{m.group(1)}", file=file, line=line,
                               field="message") from None
            check_depth(args, file=file, what=f"arguments of action #{m.group(1)}", line=line)
            num = int(m.group(1))
            if num in actions:
                raise TrajectoryError(f"action #{num} is logged twice (first on line {actions[num][2]})",
                                      file=file, line=line, field="message")
            actions[num] = (m.group(2), args, line, event.get("timestamp"))
    if not actions:
        raise TrajectoryError("no actions found: no event has an 'action' and no message reads "
                              "\"Action #i: executing tool '...' with arguments {...}\"", file=file)
    steps: list[Step] = []
    for num in sorted(actions):
        tool, args, line, ts = actions[num]
        steps.append(make_step(len(steps) + 1, tool, args, thought=thoughts.get(num), timestamp=ts,
                               file=file, line=line))
    return steps
