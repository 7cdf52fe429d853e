"""Rubrics as data (issue 36): the rubric file format, its check, lookup by task, and its writer.

See docs/rubrics.md. `format` is the one schema (`RubricLine`), `check` holds a line to the
contracts and guards a generated rubric passes, `book` finds a task's rubric (instruction hash
checked), `writer` appends lines exactly once per task.
"""
from __future__ import annotations

from .book import RubricBook, find_rubric, inline_rubric, load_book
from .check import Problem, check_line, check_lines
from .format import (
    FORMAT,
    FORMAT_VERSION,
    RubricLine,
    RubricProvenance,
    RubricSource,
    instruction_sha256,
    rubric_sha256,
    sources_line,
)
from .plan import RubricPlan
from .writer import RubricWriter

__all__ = ["FORMAT", "FORMAT_VERSION", "Problem", "RubricBook", "RubricLine", "RubricPlan", "RubricProvenance", "RubricSource",
           "RubricWriter", "check_line", "check_lines", "find_rubric", "inline_rubric", "instruction_sha256",
           "load_book", "rubric_sha256", "sources_line"]
