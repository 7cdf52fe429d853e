"""`cua-verifier view rubrics.jsonl`: a rubric file as a site, one page per task (issue 36 §2).

Why: a rubric file is reviewed before anything is trained on it. A reviewer reads each task's
instruction beside its criteria (points, conditions, exclusive groups), sub-goals, critical points,
the permission profile the guard left, and what wrote it; what the check found (an overruled grant,
an error) is at the top of the task's page and on the index, so nothing is corrected silently.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from ..rubrics import Problem, RubricLine, check_lines
from .report import Cell, Section, Table, render_report
from .site import SiteStats, slug


def is_rubric_file(path: str | Path) -> bool:
    """Whether `path` is a rubric file (its first record says ``"format": "cua-rubric"``)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            first = next((line for line in fh if line.strip()), "")
        return isinstance(data := json.loads(first), dict) and data.get("format") == "cua-rubric"
    except (OSError, ValueError):
        return False


def _task_sections(n: int, line: RubricLine, problems: list[Problem]) -> list[Section]:
    rb, prov = line.rubric, line.provenance
    found = Table.of(["line", "field", "kind", "message"], [(p.line, p.field, p.kind, p.message) for p in problems])
    criteria = Table.of(["id", "name", "max points", "condition", "exclusive group", "description"],
                        [(c.id, c.name, f"{c.max_points:g}", c.condition or "always", c.exclusive_group or "",
                          c.description) for c in rb.criteria])
    perm = rb.permission
    return [
        *([Section(title="Check", intro="What the check found on this task's line.", tables=[found])] if problems else []),
        Section(title="Task", tables=[Table.of(["field", "value"], [
            ("task id", line.task_id), ("instruction", line.instruction), ("start URL", line.start_url or ""),
            ("instruction sha256", line.instruction_sha256), ("line", n)])]),
        Section(title="Criteria", intro=f"{len(rb.criteria)} criteria, "
                f"{sum(c.max_points for c in rb.criteria):g} points in all", tables=[criteria]),
        Section(title="Sub-goals and critical points", tables=[
            Table.of(["stated sub-goal"], [(g,) for g in rb.stated_subgoals]),
            Table.of(["critical point"], [(p,) for p in rb.critical_points] or [("none",)])]),
        Section(title="Permission", tables=[Table.of(["field", "value"], [
            ("permission", perm.permission), ("quote", perm.permission_quote),
            ("missing personal data", "; ".join(perm.missing_personal_data)),
            ("underspecified", "; ".join(perm.underspecified)),
            ("overruled", rb.permission_overruled)])]),
        Section(title="Self-audit", intro=rb.self_audit or "(none)"),
        Section(title="Provenance", tables=[Table.of(["field", "value"], [
            ("model", prov.model), ("written at", prov.written_at), ("audited", prov.audited),
            ("edited by hand", prov.edited), ("tool", prov.tool),
            ("prompts", ", ".join(f"{p.id} v{p.version} ({p.sha256[:12]})" for p in prov.prompts))])]),
    ]


def build_rubric_site(path: str | Path, out: str | Path, *, title: str | None = None) -> SiteStats:
    """index.html (one row per task, with what the check found) and t/<task>.html per task."""
    import time

    t0, path, out = time.perf_counter(), Path(path), Path(out)
    entries, problems = check_lines(path.read_text(encoding="utf-8", errors="replace").split("\n"))
    by_task: dict[str | None, list[Problem]] = defaultdict(list)
    for p in problems:
        by_task[p.task_id].append(p)
    stats = SiteStats(out=out, rollouts=len(entries))
    rows = []
    for task_id, (n, line) in entries.items():
        rel = f"t/{slug(task_id)}.html"
        render_report(f"Rubric: {task_id}", _task_sections(n, line, by_task.get(task_id, [])), out / rel,
                      meta=[("file", path.name), ("line", str(n))], links=[("all tasks", "../index.html")])
        stats.pages += 1
        found = by_task.get(task_id, [])
        rows.append([Cell(text=task_id, href=rel), line.instruction[:160], len(line.rubric.criteria),
                     f"{sum(c.max_points for c in line.rubric.criteria):g}", line.rubric.permission.permission,
                     line.provenance.model, line.provenance.written_at,
                     "; ".join(f"{p.kind}: {p.field}" for p in found) or "ok"])
    unusable = [p for p in problems if p.kind == "error"]
    sections = [Section(title="Tasks", tables=[Table.of(
        ["task", "instruction", "criteria", "points", "permission", "written by", "written at", "check"], rows)])]
    if unusable:
        sections.insert(0, Section(title="Errors", intro="Lines the check refused (no page: fix them, or write "
                                   "their rubric again).", tables=[Table.of(
                                       ["line", "task", "field", "message"],
                                       [(p.line, p.task_id or "", p.field, p.message) for p in unusable])]))
    render_report(title or f"Rubrics: {path.name}", sections, out / "index.html",
                  meta=[("file", path.name), ("tasks", str(len(entries))), ("errors", str(len(unusable)))])
    stats.pages += 1
    stats.seconds = time.perf_counter() - t0
    return stats
