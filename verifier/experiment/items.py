"""The labelled set of an experiment: items with a human verdict, loaded the ways `calibrate` and
`bench` read them, and (optionally) the fixed rubric each item is scored against.

Why every item is checked before the first judge call: a labels file that misses items, or a
fixed-rubric file that misses tasks, would otherwise show up as a quietly smaller n in the report,
after the judge time was spent. Labels are stored with the results (`items.json`), so the report
needs neither the dataset nor the suite.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..schemas import Rubric
from .spec import BenchSet, CalibrationSet, ExperimentSpec, ExperimentSpecError, TrajectorySet

PASS_THRESHOLD = 0.8  # a blind median process score at or above it is a process pass (bench's rule)


class ItemLabel(BaseModel):
    """One item's identity and human verdict (None: not labelled for that target)."""

    id: str
    task_id: str
    outcome: bool | None = None
    process: bool | None = None
    source: str = ""
    """Where the run is (a path or a dataset row), shown in the report."""
    group: str = ""
    """The calibration rules it tests, or the split: lets the report break flips down."""


@dataclass
class Loaded:
    """What an item's thunk gives the scoring loop: the trajectory and the rubric to score with."""

    traj: Any
    rubric: Rubric | None = None

    def other_verdicts(self) -> dict[str, Any] | None:  # the loop copies these beside the result
        fn = getattr(self.traj, "other_verdicts", None)
        return fn() if callable(fn) else None


@dataclass
class Item:
    label: ItemLabel
    load: Callable[[], Any]
    rubric: Rubric | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def thunk(self) -> Loaded:
        return Loaded(self.load(), self.rubric)


def load_fixed_rubrics(path: str | Path) -> dict[str, Rubric]:
    """task_id -> Rubric from a rubric file (`cua-verifier rubrics`, docs/rubrics.md), checked as
    `score --rubrics` checks it (contracts, ids, the permission guard: `RubricBook`), or from plain
    ``{"task_id": ..., "rubric": {...}}`` lines (a hand-made set with no instruction hashes)."""
    return {tid: rubric for tid, (rubric, _) in _fixed(path).items()}


def _fixed(path: str | Path) -> dict[str, tuple[Rubric, Any]]:
    """task_id -> (rubric, its rubric-file line or None for a plain line)."""
    out: dict[str, tuple[Rubric, Any]] = {}
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ExperimentSpecError(f"fixed rubrics {path}: {exc}") from exc
    if any('"format_version"' in line for line in lines):  # the rubric file format: its own loader and checks
        from ..errors import RubricFileError
        from ..rubrics.book import RubricBook

        try:
            book = RubricBook.load(path)
        except RubricFileError as exc:
            raise ExperimentSpecError(f"fixed rubrics: {exc}") from exc
        return {tid: (line.rubric, line) for tid, (_, line) in book.entries.items()}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            tid, rubric = str(row["task_id"]), Rubric.model_validate(row["rubric"])
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            raise ExperimentSpecError(f"fixed rubrics {path}:{n}: expected {{task_id, rubric}} ({exc})") from exc
        if tid in out:
            raise ExperimentSpecError(f"fixed rubrics {path}:{n}: task {tid!r} given twice")
        out[tid] = (rubric, None)
    return out


def _hash_checked(load: Callable[[], Any], line: Any, where: str) -> Callable[[], Any]:
    """`load`, refusing a trajectory whose instruction is not the one its rubric was written for
    (`RubricMismatchError`, naming both: the item is unscored, as under `score --rubrics`)."""
    from ..rubrics.book import mismatch

    def checked() -> Any:
        traj = load()
        mismatch(traj.task, line, where)
        return traj
    return checked


def load_items(spec: ExperimentSpec, fixed_rubrics: str | Path | None = None) -> list[Item]:
    """Every labelled item of the spec's set (ordered, ids unique), with its rubric when fixed."""
    ls = spec.labelled
    if ls.calibration is not None:
        items = _calibration(spec, ls.calibration)
    elif ls.bench is not None:
        items = _bench(spec, ls.bench)
    else:
        assert ls.trajectories is not None
        items = _trajectories(spec, ls.trajectories)
    ids = [i.label.id for i in items]
    if len(set(ids)) != len(ids):
        raise ExperimentSpecError("the labelled set gives one id twice: " + str(sorted({i for i in ids if ids.count(i) > 1})[:5]))
    if not items:
        raise ExperimentSpecError("the labelled set is empty")
    unlabelled = [i.label.id for i in items if i.label.outcome is None and i.label.process is None]
    if unlabelled:
        raise ExperimentSpecError(f"{len(unlabelled)} item(s) have no label, e.g. {unlabelled[0]!r}")
    path = fixed_rubrics or (spec.path(spec.fixed_rubrics) if spec.fixed_rubrics else None)
    if path is not None:
        rubrics = _fixed(path)
        missing = sorted({i.label.task_id for i in items} - set(rubrics))
        if missing:
            raise ExperimentSpecError(f"fixed rubrics {path}: no rubric for {len(missing)} task(s), e.g. {missing[0]!r}")
        for it in items:
            it.rubric, line = rubrics[it.label.task_id]
            if line is not None:
                it.load = _hash_checked(it.load, line, f"fixed rubrics {path}")
    return items


def _calibration(spec: ExperimentSpec, cs: CalibrationSet) -> list[Item]:
    from ..calibrate import SuiteError, load_suite

    try:
        cases = load_suite(spec.path(cs.suite) if cs.suite else None, only=cs.only)
    except SuiteError as exc:
        raise ExperimentSpecError(str(exc)) from exc
    out = []
    for c in cases:
        if c.unavailable:
            continue  # shared data absent: not an item here (calibrate lists it as unavailable)
        band = c.expected.process
        process = True if band.lo >= PASS_THRESHOLD else False if band.hi <= PASS_THRESHOLD else None
        # keyed like any rubric file, by the run's own task id (small in-repo runs: read now)
        label = ItemLabel(id=c.name, task_id=str(c.load().task.id), outcome=c.expected.outcome, process=process,
                          source=str(c.trajectory_path), group=" ".join(c.rules))
        out.append(Item(label=label, load=c.load, rubric=c.provided_rubric))
    return out


def _bench(spec: ExperimentSpec, bs: BenchSet) -> list[Item]:
    from ..bench.dataset import load_split

    try:
        tasks = load_split(bs.split, data_dir=spec.path(bs.data_dir) if bs.data_dir else None)
    except (ValueError, OSError) as exc:
        raise ExperimentSpecError(f"bench split {bs.split}: {exc}") from exc
    out = []
    for t in tasks[: bs.limit]:
        h = t.labels
        outcome, process = _pick(h.final_outcome, h.final_process, h.blind_majority_outcome,
                                 h.blind_median_process_score, bs.label_source)
        if outcome is None and process is None:
            continue  # unlabelled rows are not part of the labelled set
        out.append(Item(label=ItemLabel(id=t.task_id, task_id=t.task_id, outcome=outcome, process=process,
                                        source=f"CUAVerifierBench {bs.split}/{t.task_id}", group=bs.split),
                        load=t.trajectory))
    return out


def _pick(final_o: bool | None, final_p: bool | None, blind_o: bool | None, blind_score: float | None,
          source: str) -> tuple[bool | None, bool | None]:
    if source == "final":
        return final_o, final_p
    return blind_o, None if blind_score is None else blind_score >= PASS_THRESHOLD


def _trajectories(spec: ExperimentSpec, ts: TrajectorySet) -> list[Item]:
    from ..bench.labels import read_labels_csv
    from ..sources import display_path, iter_path

    try:
        labels = {h.task_id: h for h in read_labels_csv(spec.path(ts.labels))[0]}
    except (OSError, ValueError) as exc:
        raise ExperimentSpecError(f"labels {ts.labels}: {exc}") from exc
    out, missing = [], []
    for raw in ts.paths:
        for rid, desc, thunk in iter_path(spec.path(raw), display_path):
            traj = thunk()  # the task id is what the labels are keyed by: read it now, not mid-run
            h = labels.get(str(traj.task.id))
            if h is None:
                missing.append(str(traj.task.id))
                continue
            outcome, process = _pick(h.final_outcome, h.final_process, h.blind_majority_outcome,
                                     h.blind_median_process_score, ts.label_source)
            out.append(Item(label=ItemLabel(id=rid, task_id=str(traj.task.id), outcome=outcome, process=process,
                                            source=desc), load=thunk))
    if missing:
        raise ExperimentSpecError(f"labels {ts.labels}: no row for {len(missing)} trajectory task id(s), "
                                  f"e.g. {missing[0]!r}")
    return out
