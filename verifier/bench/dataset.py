"""CUAVerifierBench (microsoft/CUAVerifierBench): trajectories joined with human annotations.

The dataset has two configs (``trajectories``: one row per task; ``annotations``: one row per
(task, annotator)) and two splits (``fara7b_om2w_browserbase``: 106 tasks, ~2 annotators each,
UV-blind and UV-informed phases; ``internal``: 154 tasks, 1 annotator, UV-blind only; many of its
rows carry no screenshots). We pin one revision so a report always names the exact data it used.

Two sources, same result:
- the hub, through `datasets` (imported lazily; it is an optional extra), or
- a local folder holding the dataset's parquet files, e.g. ``trajectories/<split>-00000-of-00001.parquet``
  and ``annotations/<split>-*.parquet`` (the hub layout) or ``<config>/<split>/*.parquet`` (the
  auto-converted layout). Read with pyarrow; screenshots stay encoded bytes until a judge needs them.

Rows are plain dicts; converting one to a `Trajectory` is the loaders' job (`BenchTask.trajectory`).
"""
from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .labels import HumanLabels, Verdict

log = logging.getLogger(__name__)

REPO_ID = "microsoft/CUAVerifierBench"
REVISION = "c19eb323cd802add5c3d2840ff13044061364867"
CONFIGS = ("trajectories", "annotations")
SPLITS = ("fara7b_om2w_browserbase", "internal")

#: Stored verdicts published in the trajectories config, reported as reference "verifiers".
STORED_VERIFIERS = {
    "uv (dataset, stored)": ("uv_outcome_success", "uv_rubric_score"),
    "legacy multimodal (stored)": ("mm_is_success", None),
    "legacy text-only (stored)": ("verifier_is_success", None),
}


_NEGATIVE = re.compile(r"\b(unsuccess\w*|fail\w*|incorrect|incomplete|false|no|not\s+(?:a\s+)?"
                       r"(?:success\w*|complete\w*|done|achieved|correct|pass\w*))\b")
_POSITIVE = re.compile(r"\b(success\w*|pass\w*|correct|complete\w*|true|yes)\b")


def _flag(value: Any) -> bool | None:
    """Int/bool/float/str label -> bool; None/NaN/unknown -> None (never a silent False)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return None if math.isnan(value) else bool(value)
    text = str(value).strip().lower()
    if not text:
        return None
    if "partial" in text:
        return None  # neither label; counted as unreadable rather than guessed
    if _NEGATIVE.search(text) or text in ("0", "n"):
        return False
    if _POSITIVE.search(text) or text in ("1", "y"):
        return True
    return None  # e.g. "unsure": unknown, left out of the metrics


def _score(value: Any) -> float | None:
    if value is None:
        return None
    v = float(value)
    return None if math.isnan(v) else v


@dataclass
class BenchTask:
    """One task: the trajectory row, its annotation rows, the task-level labels and stored verdicts."""

    task_id: str
    split: str
    row: dict[str, Any]
    """Every column except `screenshots` (labels and verdicts are read from here)."""
    annotations: list[dict[str, Any]] = field(default_factory=list)
    screenshots_fn: Callable[[], list[Any]] | None = None
    """Fetches this row's screenshots on demand, so a split is not held in memory as Python bytes."""

    def full_row(self) -> dict[str, Any]:
        """The row with its screenshots (encoded image dicts, bytes or PIL images)."""
        if self.screenshots_fn is None:
            return self.row
        return {**self.row, "screenshots": self.screenshots_fn()}

    @property
    def labels(self) -> HumanLabels:
        r = self.row
        blind_outcome = _flag(r.get("majority_human_outcome_vote"))
        if blind_outcome is None and r.get("majority_human_outcome_vote") is None:
            votes = [v for v in (_flag(a.get("human_judgement_outcome")) for a in self.annotations)
                     if v is not None]
            if votes and sum(votes) * 2 != len(votes):  # strict majority; a tie stays unknown
                blind_outcome = sum(votes) * 2 > len(votes)
        return HumanLabels(task_id=self.task_id, final_outcome=_flag(r.get("final_human_outcome_label")),
                           final_process=_flag(r.get("final_human_process_label")),
                           blind_majority_outcome=blind_outcome,
                           blind_median_process_score=_score(r.get("median_human_rubric_score_agnostic")))

    def stored_verdicts(self) -> list[Verdict]:
        out = []
        for name, (outcome_col, score_col) in STORED_VERIFIERS.items():
            if outcome_col in self.row:
                out.append(Verdict(task_id=self.task_id, verifier=name,
                                   outcome_success=_flag(self.row.get(outcome_col)),
                                   process_score=_score(self.row.get(score_col)) if score_col else None))
        return out

    def trajectory(self):
        """The row as a `Trajectory`, via the foundation's CUAVerifierBench loader."""
        from ..loaders.cuavb import load_cuavb_row

        return load_cuavb_row(self.full_row(), source=f"CUAVerifierBench {self.split}/{self.task_id}")


# ---- reading ------------------------------------------------------------------------------------

def _local_files(root: Path, config: str, split: str) -> list[Path]:
    """Parquet files of one config/split under `root`, accepting the hub and auto-converted layouts."""
    hits = []
    for p in sorted(root.rglob("*.parquet")):
        parts = p.relative_to(root).parts
        if config not in parts[:-1] and not parts[-1].startswith(config):
            continue
        if split in parts[:-1] or parts[-1].startswith(split) or f"{config}-{split}" in parts[-1]:
            hits.append(p)
    return hits


Rows = list[tuple[dict[str, Any], Callable[[], list[Any]] | None]]


def _split_rows(table: Any, column_getter: Callable[[int], list[Any]] | None) -> Rows:
    """(row without screenshots, lazy screenshot getter) per row of an arrow-like table."""
    import pyarrow as pa

    names = [c for c in table.column_names if c != "screenshots"]
    if isinstance(table, pa.Table):
        light = table.select(names).to_pylist()
    else:  # a datasets.Dataset
        light = [dict(r) for r in table.remove_columns([c for c in table.column_names if c not in names])]
    if column_getter is None:
        return [(r, None) for r in light]
    return [(r, (lambda i=i: column_getter(i))) for i, r in enumerate(light)]


def _read_local(root: Path, config: str, split: str) -> Rows:
    import pyarrow.parquet as pq

    files = _local_files(root, config, split)
    if not files:
        if config == "annotations":
            return []  # optional: labels still come from the trajectories rows
        raise FileNotFoundError(f"no parquet files for config {config!r} split {split!r} under {root}")
    rows: Rows = []
    for f in files:
        table = pq.read_table(f)  # arrow buffers; Python bytes are made per task, on demand
        shots = table.column("screenshots") if "screenshots" in table.column_names else None
        rows += _split_rows(table, None if shots is None else (lambda i, c=shots: c[i].as_py() or []))
    return rows


def _read_hub(config: str, split: str, revision: str) -> Rows:
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("loading from the hub needs `pip install cua-verifier[bench]` (datasets)") from exc
    ds = datasets.load_dataset(REPO_ID, config, split=split, revision=revision)
    if "screenshots" not in ds.features:
        return _split_rows(ds, None)
    feat = ds.features["screenshots"]
    inner = getattr(feat, "feature", None)
    if inner is not None and isinstance(inner, datasets.Image):  # keep encoded bytes: decode only if judged
        ds = ds.cast_column("screenshots", type(feat)(datasets.Image(decode=False)))
    return _split_rows(ds, lambda i: ds[i]["screenshots"] or [])


def load_split(split: str, *, data_dir: str | Path | None = None, revision: str = REVISION,
               task_ids: set[str] | None = None) -> list[BenchTask]:
    """Every task of `split`, its annotation rows attached (joined on task_id), in file order."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    if data_dir is not None:
        root = Path(data_dir)
        trajs, anns = _read_local(root, "trajectories", split), _read_local(root, "annotations", split)
    else:
        trajs, anns = _read_hub("trajectories", split, revision), _read_hub("annotations", split, revision)
    by_task: dict[str, list[dict[str, Any]]] = {}
    for a, _ in anns:
        by_task.setdefault(str(a["task_id"]), []).append(a)
    tasks, seen = [], set()
    for r, shots in trajs:
        tid = str(r["task_id"])
        if tid in seen:
            raise ValueError(f"duplicate task_id {tid!r} in trajectories/{split}")
        seen.add(tid)
        if task_ids is None or tid in task_ids:
            tasks.append(BenchTask(task_id=tid, split=split, row=r, annotations=by_task.get(tid, []),
                                   screenshots_fn=shots))
    orphans = set(by_task) - seen
    if orphans:
        raise ValueError(f"{len(orphans)} annotation task_id(s) have no trajectory, e.g. {min(orphans)!r}")
    return tasks


def iter_annotation_labels(tasks: list[BenchTask], column: str) -> dict[str, dict[str, Any]]:
    """`{task_id: {annotator: label}}` for inter-annotator agreement (skips missing labels)."""
    out: dict[str, dict[str, Any]] = {}
    unreadable: list[str] = []
    for t in tasks:
        for a in t.annotations:
            raw = a.get(column)
            v = _flag(raw) if column != "human_process_score" else _score(raw)
            if v is None and raw not in (None, ""):
                unreadable.append(str(raw))
            if v is not None and a.get("annotator"):
                out.setdefault(t.task_id, {})[str(a["annotator"])] = v
    if unreadable:
        log.warning("%d %s value(s) not read as a label (left out), e.g. %r", len(unreadable), column,
                    unreadable[0][:80])
    return out


def iter_trajectories(tasks: list[BenchTask]) -> Iterator[tuple[BenchTask, Any]]:
    for t in tasks:
        yield t, t.trajectory()
