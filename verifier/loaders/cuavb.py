"""Loader for CUAVerifierBench rows (`trajectories` config), from a dict, a local parquet export, or
a `datasets.Dataset`.

Row fields used: `task_id`, `instruction`, `init_url`, `final_answer` ("<no_answer>" = none),
`is_aborted`, `web_surfer_log` (the whole log as one string of JSON lines) and `screenshots` (a list
of images: PIL images from `datasets`, or `{"bytes": ..., "path": ...}` dicts from parquet). The
benchmark's Fara-7B runs have one screenshot more than actions: screenshot 0 is the initial page and
screenshot i the page after action i (so "before step i+1"; the last one is the final page).

Other columns (stored verifier verdicts, human labels) are labels, not trajectory data: they are
deliberately left out (the task is what the rubric generator sees); `verifier.bench` reads them from
the rows itself.
"""
from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import TrajectoryError
from ..trajectory import Screenshot, Task, Trajectory
from ._common import (
    NO_ANSWER,
    answer_or_none,
    check_screenshots,
    confine_screenshots,
    decode_text,
    infer_status,
    place_screenshots,
)
from .websurfer_log import parse_web_surfer_log

REQUIRED = ("task_id", "instruction", "web_surfer_log", "screenshots")


def load_cuavb_row(row: Mapping[str, Any], *, source: str = "<row>", check_images: bool = True,
                   allow_outside_screenshots: bool = False) -> Trajectory:
    """One row -> `Trajectory`. `source` names the row in errors (e.g. "file.parquet row 12").

    An image given only by `path` must lie under the working folder (paths resolve against it)
    unless `allow_outside_screenshots`: a data file's paths are the data's, not the user's.
    """
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise TrajectoryError(f"row lacks column(s) {', '.join(missing)}", file=source, field=missing[0])
    task_id, instruction = row["task_id"], row["instruction"]
    if not isinstance(task_id, str) or not task_id:
        raise TrajectoryError("must be a non-empty string", file=source, field="task_id")
    if not isinstance(instruction, str) or not instruction.strip():
        raise TrajectoryError("must be a non-empty string", file=source, field="instruction")
    log = row["web_surfer_log"]
    if not isinstance(log, (str, bytes)):
        raise TrajectoryError("must be a string of JSON lines", file=source, field="web_surfer_log")
    log_name = f"{source} web_surfer_log"
    steps = parse_web_surfer_log(decode_text(log, file=log_name, what="web_surfer_log"), file=log_name)

    images = row["screenshots"]
    if images is None:
        images = []
    if not isinstance(images, (list, tuple)):
        raise TrajectoryError("must be a list of images", file=source, field="screenshots")
    numbered = [(i, _screenshot(img, source, i)) for i, img in enumerate(images)]
    confine_screenshots([shot for _, shot in numbered], None, allow_outside=allow_outside_screenshots,
                        file=source)
    shots, warnings = place_screenshots(numbered, len(steps), first=0, file=source)
    if check_images:
        check_screenshots(shots, file=source)

    final_answer = answer_or_none(row.get("final_answer", NO_ANSWER), file=source)
    aborted = bool(row.get("is_aborted") or False)
    init_url = row.get("init_url")
    return Trajectory(task=Task(id=task_id, instruction=instruction.strip(),
                                start_url=init_url if isinstance(init_url, str) and init_url else None),
                      steps=steps, screenshots=shots, final_answer=final_answer,
                      status=infer_status(aborted=aborted, final_answer=final_answer, steps=steps),
                      source_format="cuavb", source_path=source, load_warnings=warnings)


def _screenshot(img: Any, source: str, i: int) -> Screenshot:
    field = f"screenshots[{i}]"
    if hasattr(img, "save") and hasattr(img, "size"):  # a PIL image, as `datasets` decodes them
        return Screenshot.from_image(img, step=0, timing="after")
    if isinstance(img, (bytes, bytearray)):
        return Screenshot.from_bytes(bytes(img), step=0, timing="after")
    if isinstance(img, Mapping):
        data = img.get("bytes")
        if isinstance(data, str):  # JSON exports carry base64 text
            try:
                data = base64.b64decode(data, validate=True)
            except ValueError:
                raise TrajectoryError("'bytes' is text but not base64", file=source, field=field) from None
        if isinstance(data, (bytes, bytearray)) and data:
            return Screenshot.from_bytes(bytes(data), step=0, timing="after")
        path = img.get("path")
        if isinstance(path, str) and path:
            return Screenshot.from_path(path, step=0, timing="after")
        raise TrajectoryError("image has neither bytes nor a path", file=source, field=field)
    raise TrajectoryError(f"unsupported image value ({type(img).__name__})", file=source, field=field)


def iter_cuavb_parquet(path: str | Path, *, check_images: bool = True, batch_size: int = 8,
                       allow_outside_screenshots: bool = False) -> Iterator[Trajectory]:
    """Rows of a local parquet export, streamed in small batches (screenshot columns are large)."""
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - pyarrow is in the bench extra
        raise TrajectoryError("reading parquet needs pyarrow (pip install 'cua-verifier[bench]')",
                              file=str(path)) from exc
    try:
        pf = pq.ParquetFile(str(path))
    except (OSError, ValueError) as exc:
        raise TrajectoryError(f"not a readable parquet file: {exc}", file=str(path)) from exc
    names = set(pf.schema_arrow.names)
    missing = [k for k in REQUIRED if k not in names]
    if missing:
        raise TrajectoryError(f"not a CUAVerifierBench trajectories file: no column(s) {', '.join(missing)}",
                              file=str(path))
    row_no = 0
    for batch in pf.iter_batches(batch_size=batch_size):
        for row in batch.to_pylist():
            yield load_cuavb_row(row, source=f"{path} row {row_no}", check_images=check_images,
                                 allow_outside_screenshots=allow_outside_screenshots)
            row_no += 1


def iter_cuavb_dataset(dataset: Any, *, check_images: bool = True) -> Iterator[Trajectory]:
    """Rows of a `datasets.Dataset` (e.g. `load_dataset("microsoft/CUAVerifierBench", ...)`).

    The screenshot column is read undecoded when possible: the original PNG bytes are faster than a
    PIL decode + re-encode and keep the content hash equal to the files' hash. `datasets` is only
    imported when the caller already has a Dataset, so the core install does not need it.
    """
    dataset = _undecoded_images(dataset)
    info = getattr(dataset, "info", None)
    name = getattr(info, "dataset_name", None) or "dataset"
    for i, row in enumerate(dataset):
        yield load_cuavb_row(row, source=f"{name} row {i}", check_images=check_images)


def _undecoded_images(dataset: Any) -> Any:
    if not hasattr(dataset, "cast_column") or "screenshots" not in (getattr(dataset, "features", None) or {}):
        return dataset
    try:
        import datasets

        return dataset.cast_column("screenshots", datasets.Sequence(datasets.Image(decode=False)))
    except Exception:  # noqa: BLE001 - any other feature layout: iterate the decoded images instead
        return dataset


def load_cuavb_hub(split: str = "fara7b_om2w_browserbase", *, revision: str | None = None,
                   check_images: bool = True) -> Iterator[Trajectory]:
    """Stream the benchmark from the Hugging Face hub (needs the optional `datasets` package)."""
    try:
        import datasets
    except ImportError as exc:
        raise TrajectoryError("loading from the hub needs `datasets` (pip install 'cua-verifier[bench]')") \
            from exc
    ds = datasets.load_dataset("microsoft/CUAVerifierBench", "trajectories", split=split, revision=revision)
    return iter_cuavb_dataset(ds, check_images=check_images)
