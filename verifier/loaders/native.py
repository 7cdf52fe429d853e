"""Loader for the project's own format: one `Trajectory` as JSON (`.json`), or one per line (`.jsonl`).

The record is exactly `Trajectory.to_json()` (documented field by field in examples/README.md).
Screenshot `path`s are relative to the JSON file's folder and must stay inside it (symlinks
resolved; absolute paths only when they lead there) unless the user passes
`allow_outside_screenshots=True` (CLI: `--allow-outside-screenshots`); `data_url`s embed the image
as base64. Every other format converts to this one.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import TrajectoryError
from ..trajectory import TRAJECTORY_SCHEMA_VERSION, Trajectory
from ._common import (
    check_depth,
    check_screenshots,
    confine_screenshots,
    iter_json_lines,
    parse_json,
    read_text,
)


def load_native_record(record: dict[str, Any], *, base_dir: str | Path | None = None, file: str = "<record>",
                       line: int | None = None, check_images: bool = True,
                       allow_outside_screenshots: bool = False) -> Trajectory:
    """One native record (already parsed JSON) -> `Trajectory`; relative paths resolve to `base_dir`.

    Screenshot paths must stay inside `base_dir` (the working folder for a record with no file)
    unless `allow_outside_screenshots`: see `_common.confine_screenshots`.
    """
    if not isinstance(record, dict):
        raise TrajectoryError(f"a trajectory record must be a JSON object, got {type(record).__name__}",
                              file=file, line=line)
    check_depth(record, file=file, what="trajectory record", line=line)  # also for already-parsed dicts
    version = str(record.get("schema_version", TRAJECTORY_SCHEMA_VERSION))
    if version.split(".")[0] != TRAJECTORY_SCHEMA_VERSION.split(".")[0]:
        raise TrajectoryError(f"schema_version {version} is not supported (this reader: "
                              f"{TRAJECTORY_SCHEMA_VERSION})", file=file, line=line, field="schema_version")
    try:
        traj = Trajectory.model_validate(record)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or None
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise TrajectoryError(f"{err['msg']}{more}", file=file, line=line, field=field) from None
    if base_dir is not None:
        for shot in traj.screenshots:
            if shot.path is not None and not Path(shot.path).is_absolute():
                shot.path = str(Path(base_dir) / shot.path)
    where = file if line is None else f"{file}:{line}"
    confine_screenshots(traj.screenshots, base_dir, allow_outside=allow_outside_screenshots, file=where)
    if check_images:
        check_screenshots(traj.screenshots, file=where)
    traj.source_path = file if line is None else f"{file}:{line}"
    return traj


def iter_native(path: str | Path, *, check_images: bool = True,
                allow_outside_screenshots: bool = False) -> Iterator[Trajectory]:
    """Every trajectory in a `.json` (one record, or a list of records) or `.jsonl` file."""
    p = Path(path)
    text = read_text(p, what="trajectory file")
    records: Iterable[tuple[int | None, Any]]
    if p.suffix.lower() == ".jsonl":
        records = iter_json_lines(text, file=str(p), what="trajectory file")
    else:
        data = parse_json(text, file=str(p), what="trajectory file")
        records = ((None, r) for r in data) if isinstance(data, list) else iter([(None, data)])
    for line, record in records:
        yield load_native_record(record, base_dir=os.path.abspath(p.parent), file=str(p), line=line,
                                 check_images=check_images, allow_outside_screenshots=allow_outside_screenshots)
