"""The step timeline of a rollout page: each step with its screenshots and the failure points
the diagnosis attached to it, the first failure step highlighted."""

from __future__ import annotations

import json
from typing import Any

from ..coordinates import shown_arguments
from .access import d, ints, lst, text


def timeline_view(res: dict, trajectory: Any, shot) -> dict:
    """Steps with their screenshots, failure points attached to the steps they name."""
    diag = d(res.get("diagnosis"))
    first = diag.get("first_failure_step") if isinstance(diag.get("first_failure_step"), int) else None
    points: list[dict[str, Any]] = []
    for p in lst(diag.get("failure_points")):
        p = d(p)
        points.append(
            {
                "steps": ints(p.get("steps")),
                "code": text(p.get("error_code")),
                "category": text(p.get("category")),
                "what": text(p.get("what_happened")),
                "evidence": text(p.get("evidence")),
            }
        )
    failing: set[int] = {s for p in points for s in p["steps"]}
    steps: list[dict[str, Any]] = []
    by_step: dict[Any, Any] = {}
    for n, s in enumerate(getattr(trajectory, "screenshots", None) or [], start=1):
        by_step.setdefault(s.step, []).append(shot(n))
    if trajectory is not None:
        if by_step.get(0):
            steps.append(
                {
                    "index": 0,
                    "action": "initial page",
                    "arguments": "",
                    "thought": "",
                    "url": "",
                    "error": "",
                    "shots": by_step[0],
                    "failing": False,
                    "first": False,
                    "points": [],
                }
            )
        for st in trajectory.steps:
            shown = shown_arguments(st.arguments, getattr(st, "screen", None))  # pixels of the shots beside it
            args = json.dumps(shown, ensure_ascii=False) if shown else ""
            steps.append(
                {
                    "index": st.index,
                    "action": st.action,
                    "arguments": args,
                    "thought": st.thought or "",
                    "url": st.url or "",
                    "error": st.error or "",
                    "shots": by_step.get(st.index, []),
                    "failing": st.index in failing,
                    "first": st.index == first,
                    "points": [p for p in points if st.index in p["steps"]],
                }
            )
    else:
        for i in sorted(failing | ({first} if first is not None else set())):
            steps.append(
                {
                    "index": i,
                    "action": "",
                    "arguments": "",
                    "thought": "",
                    "url": "",
                    "error": "",
                    "shots": [],
                    "failing": True,
                    "first": i == first,
                    "points": [p for p in points if i in p["steps"]],
                }
            )
    return {
        "steps": steps,
        "points": points,
        "first": first,
        "categories": [text(x) for x in lst(diag.get("categories"))],
        "ambiguity": [text(x) for x in lst(diag.get("task_ambiguity_codes"))],
        "reasoning": text(diag.get("reasoning")),
        "present": bool(diag),
    }
