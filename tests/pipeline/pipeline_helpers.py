"""Helpers for pipeline tests: tiny in-memory trajectories and scripted-answer builders."""
from __future__ import annotations

import io
import re

from PIL import Image

from verifier.judge.base import ImagePart
from verifier.trajectory import Screenshot, Step, Task, Trajectory

COLORS = ["red", "green", "blue", "yellow", "purple", "orange", "white", "black", "gray", "pink", "cyan", "brown"]


def png(color: str) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (24, 16), color).save(buf, format="PNG")
    return buf.getvalue()


def make_traj(colors: list[str] | int = 4, *, answer: str | None = "The price is $5", thoughts: list[str] | None = None,
              task: str = "Find the price of the blue mouse", task_id: str = "t1") -> Trajectory:
    """One step per screenshot; identical colors give byte-identical screenshots."""
    if isinstance(colors, int):
        colors = COLORS[:colors]
    n = len(colors)
    steps = [Step(index=i, action="click", arguments={"coordinate": [i, i]},
                  thought=(thoughts[i - 1] if thoughts else f"step {i} thought"), url=f"https://shop.example/{i}")
             for i in range(1, n + 1)]
    shots = [Screenshot.from_bytes(png(c), step=i) for i, c in enumerate(colors, start=1)]
    return Trajectory(task=Task(id=task_id, instruction=task), steps=steps, screenshots=shots, final_answer=answer)


def shot_of(messages) -> int:
    """Screenshot number of the (first) image in a request."""
    for msg in messages:
        for p in msg.content:
            if isinstance(p, ImagePart):
                return int(re.match(r"Screenshot (\d+)", p.label).group(1))
    raise AssertionError("no image in request")


def relevance_by(fn):
    """Scripted relevance: score = fn(screenshot, criterion_id)."""
    return lambda m, o: {"rows": [{"screenshot": s, "scores": [{"criterion_id": c, "score": fn(s, c)}
                                                                for c in o.expected_ids]}
                                  for s in o.expected_screenshots]}


def rescore(earned: dict[str, float], tag: str = "consistent"):
    return lambda m, o: {"items": [{"criterion_id": c, "evidence_tag": tag,
                                    "evidence_screenshots": [1], "justification": f"j-{c}",
                                    "credit_basis": "evidence", "earned": earned.get(c, 0)} for c in o.expected_ids]}


def reality(notes: dict[str, str] | None = None, cited: dict[str, list[int]] | None = None):
    """The reality call's reply: `notes` per criterion id ("none" for the rest), citing `cited`."""
    return lambda m, o: {"notes": [{"criterion_id": c, "note": (notes or {}).get(c, "none"),
                                    "screenshots": (cited or {}).get(c, [])} for c in o.expected_ids]}


def rubric_answer(criteria: list[dict]) -> dict:
    return {"stated_subgoals": ["goal"], "criteria": criteria, "self_audit": "ok"}
