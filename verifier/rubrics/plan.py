"""Where each entry point gets a task's rubric: the one policy of `score`, `score-dataset`,
`calibrate`, the TRL rewards and the reward service.

In order: a rubric given with the rollout (a `rubric` dataset column or request field), the rubric
file's (`--rubrics` / `RewardSettings.rubrics`, matched by task id, instruction hash checked),
else under `only` (`--rubrics-only` / `rubrics_only`, what training should use) the task is
refused, else one is generated during verification, by the rubric judge when one is configured
(`rubric_judge`, `--rubric-judge-url`/`--rubric-model`), otherwise by the scoring judge.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..trajectory import Task
from .book import RubricBook, find_rubric, load_book


@dataclass(frozen=True)
class RubricPlan:
    """A loaded rubric file (or none) and whether tasks without a rubric are refused."""

    book: RubricBook | None = None
    only: bool = False

    @classmethod
    def of(cls, rubrics: str | None, only: bool = False) -> RubricPlan:
        """Load and check `rubrics` now (a bad file raises RubricFileError before anything is scored)."""
        return cls(book=load_book(rubrics) if rubrics else None, only=only)

    def verify_kwargs(self, task: Task, *, inline: Any = None, rubric_judge: Any = None) -> dict[str, Any]:
        """The keyword arguments for `pipeline.verify` that carry this task's rubric (or its
        writer). Raises RubricMismatchError / RubricMissingError / RubricError for this task only."""
        rubric, source = find_rubric(task, self.book, only=self.only, inline=inline)
        if rubric is not None:
            return {"rubric": rubric, "rubric_source": source}
        return {"rubric_judge": rubric_judge} if rubric_judge is not None else {}

    def describe(self) -> str:
        """One line for run summaries and reports: which rubrics were used."""
        if self.book is None:
            return "rubrics: generated per task" + (" (rubrics_only: none on file, so every task is refused)"
                                                   if self.only else "")
        tail = "; tasks without one refused (rubrics_only)" if self.only else "; tasks without one: generated"
        return (f"rubrics: file {self.book.path} (sha256 {self.book.sha256[:12]}, {len(self.book.entries)} tasks"
                f"{', ' + str(len(self.book.overruled)) + ' grant(s) overruled' if self.book.overruled else ''}){tail}")
