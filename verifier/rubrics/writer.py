"""The rubric file as `cua-verifier rubrics` writes it: append-only, locked, durable per line.

Why the results log's machinery (`records.ResultWriter`): writing rubrics for a dataset is many
judge calls and can be killed at any moment, exactly like scoring. Each line is flushed and
fsync'ed before the next task starts, a torn last line is dropped on reopen, a second run on the
same file stops at once (the flock), and a rerun skips the task ids already written: exactly one
rubric per task.
"""
from __future__ import annotations

import json
import os

from ..records import ResultWriter
from .check import check_line
from .format import RubricLine


class RubricWriter(ResultWriter):
    """Append-only rubric file (one `RubricLine` per task), safe to reopen after a crash."""

    def write_rubric(self, line: RubricLine) -> None:
        fh = self._open()
        fh.write(line.to_json_line())
        fh.flush()
        os.fsync(fh.fileno())

    def written(self) -> dict[str, str]:
        """Task id -> instruction sha256 of the rubrics already written (takes the lock first, like
        `ResultWriter.done_ids`). A line that does not check is not counted: its task is written again."""
        self._open()
        done: dict[str, str] = {}
        for n, data in self._numbered_lines():
            line, _ = check_line(json.dumps(data), n)
            if line is not None:
                done.setdefault(line.task_id, line.instruction_sha256)
        return done
