"""Trajectory loaders: one module per on-disk format, all producing `Trajectory`.

Formats (`format=` values):
- "fara": a fara / webeval run folder (`web_surfer.log`, `*_final_answer.json`, screenshots).
- "om2w": an Online-Mind2Web run folder (`result.json`, `trajectory/<i>_full_screenshot.png`).
- "cuavb-parquet": a local parquet export of CUAVerifierBench (`trajectories` config), many rows.
- "cuavb-row": one CUAVerifierBench row given as a dict (see `cuavb.load_cuavb_row`).
- "native": the project's own JSON / JSONL (see examples/README.md).
- "browser-use": a browser-use `AgentHistoryList` JSON (`{"history": [...]}`), or a folder holding one.
- "browsergym": a BrowserGym / AgentLab experiment folder (`step_<k>.pkl.gz`, `screenshot_step_<k>.png`).
- "osworld": an OSWorld result folder (`traj.jsonl`, `result.txt`, step screenshots).

Formats that do not store the instruction (browser-use before 0.7.11, OSWorld) take it from
`task_file=` (a task list matched by task id, an OSWorld task config or a folder of them) or
`instruction=`; the agent's own claim and the environment's score go to `Trajectory.metadata`.

Loading is cheap: screenshots stay on disk / in memory and only their headers are checked (exists,
is an image, within the size guards), so a 500-step run loads in well under a second. Problems the
run can be judged despite (screenshot count != step count, thoughts missing) are recorded in
`Trajectory.load_warnings`; anything that makes the data unreadable or ambiguous raises
`TrajectoryError` / `ScreenshotError` naming the file, line and field.
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import TrajectoryError
from ..trajectory import Trajectory
from ._common import find_folders
from .browser_use import browser_use_file_in, is_browser_use_file, load_browser_use
from .browsergym import is_browsergym_folder, load_browsergym
from .cuavb import iter_cuavb_dataset, iter_cuavb_parquet, load_cuavb_hub, load_cuavb_row
from .fara import is_fara_folder, load_fara
from .native import iter_native, load_native_record
from .om2w import is_om2w_folder, load_om2w
from .osworld import MAX_RUN_DEPTH, find_osworld_runs, is_osworld_folder, load_osworld

FORMATS = ("fara", "om2w", "native", "cuavb-parquet", "cuavb-row", "browser-use", "browsergym", "osworld")
#: Formats read from a run folder (a file of the folder given instead loads the folder).
_FOLDER_FORMATS = ("fara", "om2w", "browsergym", "osworld")
#: Loaders that take `task_file=` / `instruction=`.
_TASK_OPTION_FORMATS = ("fara", "browser-use", "browsergym", "osworld")

__all__ = ["FORMATS", "detect_format", "find_osworld_runs", "find_runs", "iter_cuavb_dataset", "iter_cuavb_parquet",
           "load_browser_use", "load_browsergym", "load_cuavb_hub", "load_cuavb_row", "load_fara",
           "load_native_record", "load_om2w", "load_osworld", "load_trajectories", "load_trajectory",
           "takes_task_options"]


def takes_task_options(fmt: str) -> bool:
    """Whether a format's loader accepts `task_file=` / `instruction=` (the others store the task)."""
    return fmt in _TASK_OPTION_FORMATS


def find_runs(root: Path, *, depth: int = MAX_RUN_DEPTH) -> list[Path]:
    """Run folders nested below `root` that a folder scan lists one level at a time would miss:
    OSWorld's results tree (5 levels) and BrowserGym / AgentLab studies (`<study>/<experiment>/`,
    or deeper when studies are grouped). Sorted; a run folder's own subfolders are not searched."""
    return find_folders(root, lambda p: is_osworld_folder(p) or is_browsergym_folder(p), depth=depth)


def detect_format(path: str | Path) -> str:
    """The format of a path on disk, from its layout / suffix; raises `TrajectoryError` if unknown."""
    p = Path(path)
    if not p.exists():
        raise TrajectoryError("no such file or directory", file=str(p))
    if p.is_dir():
        if is_fara_folder(p):
            return "fara"
        if is_om2w_folder(p):
            return "om2w"
        if is_browsergym_folder(p):
            return "browsergym"
        if is_osworld_folder(p):
            return "osworld"
        if (p / "trajectory.json").is_file():
            return "native"
        if browser_use_file_in(p) is not None and not _holds_run_folders(p):
            return "browser-use"
        raise TrajectoryError("unknown trajectory folder: expected web_surfer.log + *_final_answer.json "
                              "(fara), result.json (Online-Mind2Web), step_0.pkl.gz (BrowserGym), traj.jsonl "
                              "(OSWorld), a browser-use history .json or trajectory.json (native)",
                              file=str(p))
    if _member_of_folder(p):
        return detect_format(p.parent)
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        return "cuavb-parquet"
    if suffix == ".json" and is_browser_use_file(p):
        return "browser-use"
    if suffix in (".json", ".jsonl"):
        return "native"
    raise TrajectoryError(f"unknown trajectory file type {suffix or '(no suffix)'!r}: expected a folder, "
                          ".json, .jsonl or .parquet", file=str(p))


def load_trajectories(path_or_row: str | Path | Mapping[str, Any], *, format: str = "auto",
                      check_images: bool = True, allow_outside_screenshots: bool = False,
                      **options: Any) -> Iterator[Trajectory]:
    """Every trajectory at `path_or_row` (a folder gives one, JSONL / parquet give many), lazily.

    `options` go to the format's loader (`task_file=` / `instruction=` for the formats of
    `takes_task_options`; formats that store their task ignore them).
    Screenshot files must lie inside the trajectory's folder (symlinks resolved) unless
    `allow_outside_screenshots` (CLI: `--allow-outside-screenshots`).
    """
    outside = allow_outside_screenshots
    if isinstance(path_or_row, Mapping):
        yield _load_mapping(path_or_row, format, check_images, outside)
        return
    p = Path(path_or_row)
    fmt = detect_format(p) if format == "auto" else format
    if fmt not in FORMATS:
        raise TrajectoryError(f"unknown format {fmt!r}; choose one of auto, {', '.join(FORMATS)}")
    if not p.exists():
        raise TrajectoryError("no such file or directory", file=str(p))
    if fmt in _FOLDER_FORMATS and p.is_file() and _member_of_folder(p):
        p = p.parent  # a file of a run folder was given: load the folder
    if fmt == "fara":
        yield load_fara(p, check_images=check_images, allow_outside_screenshots=outside, **options)
    elif fmt == "om2w":
        yield load_om2w(p, check_images=check_images, allow_outside_screenshots=outside)
    elif fmt == "browser-use":
        yield load_browser_use(p, check_images=check_images, allow_outside_screenshots=outside, **options)
    elif fmt == "browsergym":
        yield load_browsergym(p, check_images=check_images, allow_outside_screenshots=outside, **options)
    elif fmt == "osworld":
        yield load_osworld(p, check_images=check_images, allow_outside_screenshots=outside, **options)
    elif fmt == "cuavb-parquet":
        yield from iter_cuavb_parquet(p, check_images=check_images, allow_outside_screenshots=outside)
    elif fmt == "native":
        yield from iter_native(p / "trajectory.json" if p.is_dir() else p, check_images=check_images,
                               allow_outside_screenshots=outside)
    else:
        raise TrajectoryError("format 'cuavb-row' takes a dict, not a path", file=str(p))


def load_trajectory(path_or_row: str | Path | Mapping[str, Any], *, format: str = "auto",
                    check_images: bool = True, **options: Any) -> Trajectory:
    """Exactly one trajectory; a file holding several raises (use `load_trajectories`)."""
    it = load_trajectories(path_or_row, format=format, check_images=check_images, **options)
    first = next(it, None)
    if first is None:
        raise TrajectoryError("holds no trajectory", file=str(path_or_row))
    if next(it, None) is not None:
        raise TrajectoryError("holds more than one trajectory; use load_trajectories()",
                              file=str(path_or_row))
    return first


def _holds_run_folders(p: Path) -> bool:
    """Whether a subfolder of `p` is itself a run (then `p` is a folder of runs, not one run)."""
    try:
        subs = [c for c in p.iterdir() if c.is_dir()]
    except OSError:
        return False
    return any(is_fara_folder(c) or is_om2w_folder(c) or is_browsergym_folder(c) or is_osworld_folder(c)
               or (c / "trajectory.json").is_file() or browser_use_file_in(c) is not None for c in subs)


def _member_of_folder(p: Path) -> bool:
    """A file that only makes sense as part of a run folder (fara, Online-Mind2Web, BrowserGym, OSWorld)."""
    return (p.name in ("web_surfer.log", "result.json", "traj.jsonl", "summary_info.json", "goal_object.pkl.gz")
            or p.name.endswith("_final_answer.json") or re.match(r"^step_\d+\.pkl(\.gz)?$", p.name) is not None)


def _load_mapping(row: Mapping[str, Any], format: str, check_images: bool, outside: bool) -> Trajectory:
    if format == "cuavb-row" or (format == "auto" and "web_surfer_log" in row):
        return load_cuavb_row(row, check_images=check_images, allow_outside_screenshots=outside)
    if format in ("native", "auto") and isinstance(row.get("task"), Mapping):
        return load_native_record(dict(row), check_images=check_images, allow_outside_screenshots=outside)
    raise TrajectoryError("cannot tell the format of this record: expected a CUAVerifierBench row "
                          "(web_surfer_log, screenshots, ...) or a native record (task, steps, ...)")
