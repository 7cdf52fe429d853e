"""Helpers for the rubric-file tests: tiny trajectories, a scripted rubric writer, file lines."""
from __future__ import annotations

import io
import json
from pathlib import Path

from PIL import Image

from verifier.trajectory import Screenshot, Step, Task, Trajectory

TASK = "Find the price of the blue mouse"


def png(color: str) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (24, 16), color).save(buf, format="PNG")
    return buf.getvalue()


def make_traj(task: str = TASK, task_id: str = "t1", colors: tuple[str, ...] = ("red", "blue")) -> Trajectory:
    steps = [Step(index=i, action="click", arguments={"coordinate": [i, i]}, thought=f"step {i}",
                  url=f"https://shop.example/{i}") for i in range(1, len(colors) + 1)]
    shots = [Screenshot.from_bytes(png(c), step=i) for i, c in enumerate(colors, start=1)]
    return Trajectory(task=Task(id=task_id, instruction=task), steps=steps, screenshots=shots,
                      final_answer="The price is $5")


def counter_rubric(calls: list[int]):
    """A scripted rubric answer that differs at each call (a judge at temperature > 0)."""
    def answer(_m, _o):
        calls.append(1)
        k = len(calls)
        return {"stated_subgoals": [f"goal {k}"],
                "criteria": [{"name": f"Find it ({k})", "description": "Full: price found.", "max_points": 2 + k},
                             {"name": "Report", "description": "Full: reported.", "max_points": 4}],
                "self_audit": f"audit {k}"}
    return answer


def write_lines(path: Path, lines: list[dict | str]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path
