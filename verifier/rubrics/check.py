"""Checking a rubric file against the contracts and guards a generated rubric passes.

Why the same checks: a rubric file is reviewed and hand-edited, and a hand edit must not open a
door the judge's reply cannot. So every line is held to
- the file schema (`RubricLine`: format version, task id, instruction hash, provenance);
- the rubric writer's own output contract (`schemas.RubricDraft`: at most `MAX_CRITERIA` criteria,
  1-24 whole points each, text bounds, at least one sub-goal, at least one criterion that always
  applies) and the ids code assigns (c1..cN in order, no penalty criteria, an exclusive group only
  on a conditional criterion);
- the instruction's own hash (an edited instruction is another task);
- the permission guard (`guards.check_permission`): a "granted" whose quote is not an explicit
  grant in the task text is overruled to "not_granted" and *reported*, never silently kept.

Each problem names the line, the task and the field. Errors make the file unusable; an overruled
grant is corrected in the loaded rubric (as the pipeline corrects a judge's) and listed.
"""
from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from ..guards import check_permission
from ..schemas import Rubric, RubricDraft
from .format import FORMAT_VERSION, RubricLine, instruction_sha256, rubric_sha256


class Problem(BaseModel):
    """One finding of the check: where (line, task, field) and what."""

    line: int
    task_id: str | None = None
    field: str = ""
    message: str
    kind: Literal["error", "overruled"] = "error"

    def text(self, path: str = "") -> str:
        where = f"{path}:{self.line}" if path else f"line {self.line}"
        task = f" task {self.task_id!r}" if self.task_id else ""
        field = f" field {self.field}" if self.field else ""
        label = "overruled" if self.kind == "overruled" else "error"
        return f"{where}:{task}{field}: {label}: {self.message}"


def _loc(prefix: str, loc: tuple[Any, ...]) -> str:
    return ".".join([prefix, *map(str, loc)]) if prefix else ".".join(map(str, loc))


def _validation(exc: ValidationError, n: int, task_id: str | None, prefix: str = "") -> list[Problem]:
    return [Problem(line=n, task_id=task_id, field=_loc(prefix, e["loc"]), message=e["msg"]) for e in exc.errors()]


def _draft_of(rubric: Rubric) -> dict[str, Any]:
    """The rubric as the rubric writer's reply would have said it (what `Rubric.from_draft` reads)."""
    return {"stated_subgoals": rubric.stated_subgoals,
            "permission_profile": rubric.permission.model_dump(mode="json"),
            "critical_points": rubric.critical_points, "self_audit": rubric.self_audit,
            "criteria": [{"name": c.name, "description": c.description,
                          "max_points": int(c.max_points) if float(c.max_points).is_integer() else c.max_points,
                          "condition": c.condition, "exclusive_group": c.exclusive_group}
                         for c in rubric.criteria]}


def contract_problems(rubric: Rubric, n: int, task_id: str | None, prefix: str = "rubric") -> list[Problem]:
    """What a generated rubric could not contain: the writer's reply contract and code's ids."""
    out: list[Problem] = []
    try:
        RubricDraft.model_validate(_draft_of(rubric))
    except ValidationError as exc:
        renamed = [Problem(**{**p.model_dump(), "field": p.field.replace(f"{prefix}.permission_profile",
                                                                          f"{prefix}.permission")})
                   for p in _validation(exc, n, task_id, prefix)]
        out += renamed
    for i, c in enumerate(rubric.criteria):
        where = f"{prefix}.criteria.{i}"
        if c.id != f"c{i + 1}":
            out.append(Problem(line=n, task_id=task_id, field=f"{where}.id",
                               message=f"criterion ids run c1..cN in order; expected 'c{i + 1}', got {c.id!r}"))
        if c.is_penalty:
            out.append(Problem(line=n, task_id=task_id, field=f"{where}.is_penalty",
                               message="penalties come only from side-effect detection, never from a rubric"))
        if c.exclusive_group and not c.condition:
            out.append(Problem(line=n, task_id=task_id, field=f"{where}.exclusive_group",
                               message="an exclusive group needs a condition (alternatives are conditional)"))
    return out


def guarded(rubric: Rubric, instruction: str) -> tuple[Rubric, str]:
    """(the rubric with its permission profile checked against the task text, why it was overruled
    or "") - the same guard a generated rubric passes (`stages.rubric._guarded`)."""
    profile, why = check_permission(rubric.permission, instruction, rubric.critical_points)
    if not why:
        return rubric, ""
    return rubric.model_copy(update={"permission": profile, "permission_overruled": why}), why


def check_line(text: str, n: int) -> tuple[RubricLine | None, list[Problem]]:
    """(the line as it will be used, or None when it has errors; every problem found)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, [Problem(line=n, message=f"not JSON ({exc.msg} at column {exc.colno})")]
    if not isinstance(data, dict):
        return None, [Problem(line=n, message=f"expected a JSON object, got {type(data).__name__}")]
    task_id = data.get("task_id") if isinstance(data.get("task_id"), str) else None
    version = data.get("format_version")
    if isinstance(version, int) and version > FORMAT_VERSION:
        return None, [Problem(line=n, task_id=task_id, field="format_version", message=(
            f"format version {version} is newer than this release reads ({FORMAT_VERSION}): upgrade cua-verifier"))]
    try:
        line = RubricLine.model_validate(data)
    except ValidationError as exc:
        return None, _validation(exc, n, task_id)
    problems = contract_problems(line.rubric, n, task_id)
    if (got := instruction_sha256(line.instruction)) != line.instruction_sha256:
        problems.append(Problem(line=n, task_id=task_id, field="instruction_sha256", message=(
            f"{line.instruction_sha256} is not the hash of this line's instruction ({got}): the instruction "
            "was edited after the rubric was written; write the rubric again for the new instruction")))
    if problems:
        return None, problems
    rubric, why = guarded(line.rubric, line.instruction)
    if not why:
        return line, []
    overruled = Problem(line=n, task_id=task_id, field="rubric.permission.permission", message=why, kind="overruled")
    return line.model_copy(update={"rubric": rubric}), [overruled]


def check_lines(lines: list[str]) -> tuple[dict[str, tuple[int, RubricLine]], list[Problem]]:
    """Every line checked, plus what only the whole file shows: a task id given twice with
    different rubrics or instructions (the same line repeated, e.g. by a resumed run, is fine)."""
    entries: dict[str, tuple[int, RubricLine]] = {}
    problems: list[Problem] = []
    for n, text in enumerate(lines, 1):
        if not text.strip():
            continue
        line, found = check_line(text, n)
        problems += found
        if line is None:
            continue
        seen = entries.get(line.task_id)
        if seen is None:
            entries[line.task_id] = (n, line)
        elif (seen[1].instruction_sha256, rubric_sha256(seen[1].rubric)) != (
                line.instruction_sha256, rubric_sha256(line.rubric)):
            problems.append(Problem(line=n, task_id=line.task_id, field="task_id", message=(
                f"task id also on line {seen[0]} with a different rubric or instruction: keep one")))
    return entries, problems
