"""Screenshot sets for the benchmark: real page captures, made distinct without re-encoding.

Real screenshots matter: their size and compressibility decide what encoding costs. A benchmark
of M screenshots needs M distinct contents (a content-hash cache would otherwise make the run
trivially cheap), so each copy of a source PNG gets its own ``tEXt`` chunk: different bytes and
hash, same pixels, no encode. As in `recipes/benchmark_pipeline.py`, every fourth screenshot
repeats the previous one byte for byte (a page that did not change).
"""
from __future__ import annotations

import io
import os
import struct
import zlib
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw

from ..trajectory import Screenshot, Step, Task, Trajectory

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: The captures' folder inside the shared data.
SHOTS_SUBDIR = Path("trajectories") / "fara-alltrails-find-23"


def shared_shots() -> Path:
    """Real 1440x900 captures: ``$CUA_SHARED_DATA`` (the test suite's variable) when set, else
    ``../shared/data`` beside the repository. A git worktree elsewhere has no ``../shared``: set the
    variable (or pass a folder), or the benchmark falls back to synthetic pages (see `describe`)."""
    data = os.environ.get("CUA_SHARED_DATA")
    root = Path(data) if data else Path(__file__).resolve().parents[2].parent / "shared" / "data"
    return root / SHOTS_SUBDIR


def tagged_png(png: bytes, tag: str) -> bytes:
    """`png` with a ``tEXt`` chunk inserted after IHDR: new bytes, same pixels."""
    if not png.startswith(_PNG_SIGNATURE):
        raise ValueError("not a PNG")
    ihdr_end = 8 + 4 + 4 + struct.unpack(">I", png[8:12])[0] + 4
    data = b"bench\x00" + tag.encode()
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    return png[:ihdr_end] + chunk + png[ihdr_end:]


@lru_cache(maxsize=8)  # pure: the fallback and `describe` share the renders
def synthetic_page(width: int = 1440, height: int = 900, seed: int = 0) -> bytes:
    """A text-heavy page-like PNG (used when no real screenshots are available)."""
    img = Image.new("RGB", (width, height), (250, 250, 250))
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, 0, width, 64), fill=(30, 60, 120 + seed % 100))
    for row in range(90, height - 20, 22):
        draw.text((40, row), f"Result {row // 22 + seed}: opening hours, reviews, trails and prices " * 3,
                  fill=(20, 20, 20))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def source_pngs(folder: Path | None = None) -> list[bytes]:
    """Distinct source PNGs: those in `folder` (default: `shared_shots`), else synthetic."""
    folder = folder or shared_shots()
    files = sorted(folder.glob("*.png")) if folder.is_dir() else []
    found: dict[bytes, None] = {f.read_bytes(): None for f in files}
    return list(found) or [synthetic_page(seed=k) for k in range(3)]


def describe(sources: list[bytes]) -> str:
    """What the figures were measured on, for the benchmark's first line: synthetic pages are far
    smaller than real captures (6.4 against 39 MB sent at M = 50), so a run must say which it used."""
    synthetic = sources == [synthetic_page(seed=k) for k in range(len(sources))]
    kind = "SYNTHETIC pages (no real captures found)" if synthetic else "real screenshots"
    return f"{len(sources)} source {kind}, {sum(map(len, sources)) / 1e6:.1f} MB"


def trajectory(m: int, sources: list[bytes], *, run: str = "0") -> Trajectory:
    """M screenshots cycling through `sources`, each distinct (tag) except every fourth (a repeat)."""
    shots: list[Screenshot] = []
    for i in range(1, m + 1):
        if i % 4 == 0 and shots:
            data = shots[-1].bytes()
        else:
            data = tagged_png(sources[i % len(sources)], f"run {run} shot {i}")
        shots.append(Screenshot.from_bytes(data, step=i))
    # The thoughts name the run: rollouts of one task differ in their histories, as in a GRPO group.
    steps = [Step(index=i, action="click", arguments={"coordinate": [10 * i, 20]}, thought=f"step {i} of {run}")
             for i in range(1, m + 1)]
    return Trajectory(task=Task(id="bench-http", instruction="Find the best waterfalls to see while hiking "
                                "in the Superstition Mountains"),
                      steps=steps, screenshots=shots, final_answer="Massacre Falls and Hieroglyphic Canyon")


def write_rows(path: str | Path, rows: int, tasks: int, shots: int, *, task_prefix: str = "task-") -> None:
    """`rows` rollouts of `tasks` tasks (interleaved) as native JSONL, each with `shots` inline
    screenshots: the large-row source the Ray benchmark and its tests read. Each task's instruction
    differs, so each gets a rubric of its own rather than one shared."""
    sources = source_pngs()
    with open(path, "w") as fh:
        for k in range(rows):
            traj = trajectory(shots, sources, run=f"r{k}")
            traj.task.id = f"{task_prefix}{k % tasks}"
            traj.task.instruction += f" (variant {k % tasks})"
            fh.write(traj.to_json() + "\n")
