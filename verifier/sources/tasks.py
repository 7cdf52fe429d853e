"""The distinct tasks of some sources, for `cua-verifier rubrics`: a rubric is written per task,
not per trajectory.

A source is anything `score` reads (a trajectory, a folder of them, native JSONL) or a plain task
list (`loaders.task_file.read_task_list`: WebTailBench TSV, Online-Mind2Web JSON/JSONL). Like the
scoring loop, reading never raises: what cannot be read comes back as an error for its place, and
the command reports it. A task id seen twice with two instructions is reported too (the rubric
file holds one rubric per id).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import CuaVerifierError
from ..loaders.task_file import read_task_list
from ..trajectory import Task
from .items import display_path, iter_path


def _tasks_of(raw: str, options: Mapping[str, Any]) -> Iterator[tuple[str, Task | BaseException]]:
    path = Path(raw)
    try:
        listed = read_task_list(path)
    except CuaVerifierError as exc:
        yield display_path(path), exc
        return
    if listed is not None:
        for n, entry in enumerate(listed, 1):
            yield f"{display_path(path)}#{n}", Task(id=entry["id"], instruction=entry["instruction"],
                                                    start_url=entry.get("start_url"),
                                                    metadata=entry.get("metadata") or {})
        return
    for rid, _, thunk in iter_path(path, display_path, task_options=options):
        try:
            yield rid, thunk().task
        except CuaVerifierError as exc:
            yield rid, exc


def distinct_tasks(sources: Iterable[str], options: Mapping[str, Any] | None = None
                   ) -> tuple[list[Task], list[str]]:
    """(each task once, in first-seen order; problems as "place: reason")."""
    tasks: dict[str, Task] = {}
    problems: list[str] = []
    for raw in sources:
        for where, got in _tasks_of(raw, options or {}):
            if isinstance(got, BaseException):
                problems.append(f"{where}: {type(got).__name__}: {got}")
                continue
            seen = tasks.get(got.id)
            if seen is None:
                tasks[got.id] = got
            elif seen.instruction != got.instruction:
                problems.append(f"{where}: task id {got.id!r} appears with two instructions "
                                f"({seen.instruction[:80]!r} and {got.instruction[:80]!r}); kept the first")
    return list(tasks.values()), problems
