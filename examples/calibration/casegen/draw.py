"""Drawing and writing helpers for the case modules (kept apart so the case lists stay readable).

A page is a schematic browser screenshot: address bar, title, optional red alert banner, body lines
and buttons. Pages are saved as 16-colour palette PNGs (a few KB each) so the whole suite stays
small; identical pages inside one case are written once and referenced by every screenshot entry.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from verifier.trajectory import RunStatus, Screenshot, Step, Task, Trajectory

W, H = 640, 400
T0 = 1780300800.0  # 2026-06-01T08:00:00Z: fixed, so the files are byte-reproducible
RUBRIC_FILE = "rubric.json"
LEN, PED, MEC, REAL = "lenient-trap", "pedantic-trap", "mechanism", "real"
TOOLS = ["click", "type", "scroll", "terminate"]  # what the (imaginary) harness offered every run


def t(answer: str, thought: str) -> tuple[str, dict[str, Any], str]:
    """The terminating step: the agent's final answer and its last thought."""
    return ("terminate", {"answer": answer}, thought)


@dataclass(frozen=True)
class P:
    """One page: where it is, its title, its text lines, its buttons and an optional alert banner."""

    url: str
    title: str
    lines: tuple[str, ...] = ()
    buttons: tuple[str, ...] = ()
    banner: str | None = None


@dataclass
class Case:
    """A calibration case: the run (pages before each step + the end page) and the careful verdict."""

    name: str
    rules: list[str]
    side: str  # "lenient-trap" | "pedantic-trap" | "mechanism"
    task: str
    pages: list[P]
    steps: list[tuple[str, dict[str, Any], str]]
    answer: str | None
    outcome: bool
    process: str | list[float]
    why: str
    diagnosis: list[str] = field(default_factory=list)
    status: RunStatus = RunStatus.finished
    errors: dict[int, str] = field(default_factory=dict)  # step index -> the error the action raised
    penalty: bool | None = None  # a careful human charges a side-effect penalty (None: not checked)
    violation: bool | None = None  # ... finds a critical-point violation (None: not checked)
    rubric: dict[str, Any] | None = None  # a provided rubric (Rubric JSON) the judge must score against
    t0: float = T0  # when the run started: the run date a judge needs for "upcoming", "this Sunday"


def draw(p: P) -> Image.Image:
    img = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(img)
    small, body, big = (ImageFont.load_default(size=s) for s in (13, 16, 22))
    d.rectangle([0, 0, W, 34], fill=(222, 225, 230))
    d.rounded_rectangle([10, 6, W - 10, 28], radius=8, fill="white", outline=(170, 170, 170))
    d.text((20, 10), p.url, fill=(40, 40, 40), font=small)
    d.text((24, 46), p.title, fill=(20, 40, 120), font=big)
    y = 84
    if p.banner:
        d.rectangle([20, y, W - 20, y + 32], fill=(200, 30, 30))
        d.text((32, y + 8), p.banner, fill="white", font=body)
        y += 44
    for line in p.lines:
        d.text((24, y), line, fill=(30, 30, 30), font=body)
        y += 24
    x = 24
    for label in p.buttons:
        wbox = int(d.textlength(label, font=body)) + 24
        d.rounded_rectangle([x, H - 56, x + wbox, H - 24], radius=6, fill=(30, 110, 200))
        d.text((x + 12, H - 48), label, fill="white", font=body)
        x += wbox + 16
    return img.quantize(colors=16, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)  # 7x MEDIANCUT


def write_case(out: Path, c: Case) -> int:
    """Write `out/<name>/` (pages, trajectory.json, expected.json); returns the bytes written."""
    if len(c.pages) != len(c.steps) + 1:
        raise ValueError(f"{c.name}: {len(c.steps)} steps need {len(c.steps) + 1} pages, got {len(c.pages)}")
    folder = out / c.name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    files: dict[str, str] = {}  # page key -> file name (identical pages share one file)
    shots = []
    n = len(c.steps)
    for i, p in enumerate(c.pages):
        key = hashlib.sha256(repr(p).encode()).hexdigest()
        if key not in files:
            files[key] = f"page_{len(files):02d}.png"
            draw(p).save(folder / files[key], optimize=True)
        step, timing = (i + 1, "before") if i < n else (n, "after")
        shots.append(Screenshot.from_path(files[key], step=step, timing=timing))
    steps = [Step(index=i + 1, action=a, arguments=args, thought=th, url=c.pages[i].url,
                  timestamp=c.t0 + 7 * (i + 1), error=c.errors.get(i + 1))
             for i, (a, args, th) in enumerate(c.steps)]
    task = Task(id=f"calib-{c.name}", instruction=c.task, start_url=c.pages[0].url, metadata={"tools": TOOLS})
    traj = Trajectory(task=task,
                      steps=steps, screenshots=shots, final_answer=c.answer, status=c.status,
                      source_format="native")
    (folder / "trajectory.json").write_text(traj.to_json(indent=1, exclude={"source_path"} | (set() if traj.metadata else {"metadata"})) + "\n")
    expected: dict[str, Any] = {"rules": c.rules, "side": c.side, "outcome": c.outcome, "process": c.process,
                                "diagnosis": c.diagnosis}
    expected.update({k: v for k, v in (("penalty", c.penalty), ("violation", c.violation)) if v is not None})
    if c.rubric is not None:
        expected["rubric"] = RUBRIC_FILE
        (folder / RUBRIC_FILE).write_text(json.dumps(c.rubric, indent=1) + "\n")
    expected["why"] = " ".join(c.why.split())
    (folder / "expected.json").write_text(json.dumps(expected, indent=2, ensure_ascii=False) + "\n")
    return sum(f.stat().st_size for f in folder.iterdir())


def write_trajectory(folder: Path, traj: Trajectory) -> None:
    """`trajectory.json` as committed: no machine path, and no empty `metadata` (cases written before
    the field existed stay byte-identical)."""
    exclude = {"source_path"} | (set() if traj.metadata else {"metadata"})
    (folder / "trajectory.json").write_text(traj.to_json(indent=1, exclude=exclude) + "\n")
