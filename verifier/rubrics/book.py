"""A loaded rubric file, and finding the rubric of one task (by id, its instruction hash checked).

Every entry point goes through `find_rubric`: an inline rubric (a `rubric` dataset column or
request field) first, then the file; with none, `only` refuses the task (`RubricMissingError`:
unscored offline, None at the TRL boundary), else the caller generates one as before. A task whose
instruction does not hash to what the file holds for its id is an error naming both
(`RubricMismatchError`): the rubric was written for another text.

Loading is cached per (path, size, mtime) in each process, so a reward session, a Ray actor or a
request handler reads and checks the file once, not per rollout.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RubricError, RubricFileError, RubricMismatchError, RubricMissingError
from ..schemas import Rubric
from ..trajectory import Task
from .check import Problem, check_line, check_lines, contract_problems, guarded
from .format import RubricLine, RubricSource, instruction_sha256, rubric_sha256

log = logging.getLogger(__name__)


@dataclass
class RubricBook:
    """A checked rubric file: task id -> (line number, line), and what the check overruled."""

    path: str
    sha256: str
    entries: dict[str, tuple[int, RubricLine]] = field(default_factory=dict)
    overruled: list[Problem] = field(default_factory=list)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RubricBook:
        """Read and check a rubric file. Raises RubricFileError listing every error (line, task,
        field); overruled grants are corrected, logged and kept in `overruled`."""
        p = Path(path)
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise RubricFileError(f"rubric file {p}: cannot read it ({exc})") from exc
        entries, problems = check_lines(raw.decode("utf-8", errors="replace").split("\n"))
        errors = [x for x in problems if x.kind == "error"]
        if errors:
            shown = "\n  ".join(e.text(str(p)) for e in errors[:20])
            more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
            raise RubricFileError(f"rubric file {p}: {len(errors)} problem(s) "
                                  f"(`cua-verifier rubrics --check {p}` lists them all):\n  {shown}{more}", errors)
        book = cls(path=str(path), sha256=hashlib.sha256(raw).hexdigest(), entries=entries,
                   overruled=[x for x in problems if x.kind == "overruled"])
        for x in book.overruled:
            log.warning("%s", x.text(str(p)))
        return book

    def source(self, n: int, line: RubricLine) -> RubricSource:
        return RubricSource(kind="file", rubric_sha256=rubric_sha256(line.rubric), path=self.path,
                            file_sha256=self.sha256, line=n, model=line.provenance.model,
                            written_at=line.provenance.written_at)

    def lookup(self, task: Task) -> tuple[Rubric, RubricSource] | None:
        """The file's rubric for `task`, or None when the file has none for its id.
        Raises RubricMismatchError when the file's instruction hash for that id is not the task's."""
        got = self.entries.get(task.id)
        if got is None:
            return None
        n, line = got
        mismatch(task, line, f"rubric file {self.path}:{n}")
        return line.rubric, self.source(n, line)


def mismatch(task: Task, line: RubricLine, where: str) -> None:
    """Raise RubricMismatchError naming both instructions when `line` is not for `task`'s text."""
    have = instruction_sha256(task.instruction)
    if have != line.instruction_sha256:
        raise RubricMismatchError(
            f"task {task.id!r}: {where} was written for instruction sha256 {line.instruction_sha256[:16]} "
            f"({line.instruction[:120]!r}), but this trajectory's instruction hashes to {have[:16]} "
            f"({task.instruction[:120]!r}): write its rubric again or fix the task")


_CACHE: dict[tuple[str, int, int], RubricBook] = {}
_LOCK = threading.Lock()


def load_book(path: str | os.PathLike[str]) -> RubricBook:
    """`RubricBook.load`, once per (path, size, mtime) in this process."""
    st = Path(path).stat() if Path(path).exists() else None
    key = (os.path.abspath(path), st.st_size if st else -1, st.st_mtime_ns if st else -1)
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    book = RubricBook.load(path)
    with _LOCK:
        _CACHE[key] = book
    return book


def inline_rubric(value: Any, task: Task) -> tuple[Rubric, RubricSource]:
    """A rubric given with the rollout (dataset column, request field): a rubric file's line (its
    task id and instruction hash must match) or a bare rubric (criteria, ...), as an object or its
    JSON text. Checked like a file's line. Raises RubricError naming the field."""
    if isinstance(value, (Rubric, RubricLine)):
        value = value.model_dump(mode="json")
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise RubricError(f"task {task.id!r}: field 'rubric' is not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise RubricError(f"task {task.id!r}: field 'rubric' must be an object, got {type(value).__name__}")
    if "rubric" in value and "task_id" in value:  # a rubric file's line
        line, problems = check_line(json.dumps(value), 1)
        if line is None:
            raise RubricError(f"task {task.id!r}: field 'rubric': " + "; ".join(
                f"{p.field or 'line'}: {p.message}" for p in problems))
        if line.task_id != task.id:
            raise RubricMismatchError(f"field 'rubric' is for task {line.task_id!r}, the rollout's task is {task.id!r}")
        mismatch(task, line, "field 'rubric'")
        return line.rubric, RubricSource(kind="inline", rubric_sha256=rubric_sha256(line.rubric),
                                         model=line.provenance.model, written_at=line.provenance.written_at)
    try:
        rubric = Rubric.model_validate(value)
    except ValueError as exc:
        raise RubricError(f"task {task.id!r}: field 'rubric' is not a rubric: {exc}") from exc
    if problems := contract_problems(rubric, 1, task.id):
        raise RubricError(f"task {task.id!r}: field 'rubric': " + "; ".join(f"{p.field}: {p.message}" for p in problems))
    rubric, _ = guarded(rubric, task.instruction)
    return rubric, RubricSource(kind="inline", rubric_sha256=rubric_sha256(rubric))


def find_rubric(task: Task, book: RubricBook | None, *, only: bool = False,
                inline: Any = None) -> tuple[Rubric | None, RubricSource | None]:
    """The rubric to score `task` against: `inline` first, then `book`; (None, None) means
    "generate one". Raises RubricMissingError under `only` when neither has one."""
    if inline is not None:
        return inline_rubric(inline, task)
    found = book.lookup(task) if book is not None else None
    if found is not None:
        return found
    if only:
        where = f"the rubric file {book.path}" if book is not None else "no rubric file was given and"
        raise RubricMissingError(f"task {task.id!r}: {where} has no rubric for it and rubrics_only is set "
                                 "(`cua-verifier rubrics` writes one); not scored")
    return None, None
