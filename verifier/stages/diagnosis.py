"""Stage 10: failure diagnosis with the 7-category / 24-subcategory error taxonomy.

Two independent calls run together: failure points (categories 1-6, localised to step numbers)
and task ambiguity (category 7). Neither changes a score. Each may fail alone; the result then
lists it in `degraded`. Step numbers outside the trajectory are dropped in code rather than trusted.
"""
from __future__ import annotations

import asyncio

from ..errors import JudgeError
from ..result import DiagnosisResult, FailurePointResult
from ..schemas import FailureReport, TaskValidity, category_of
from .base import Run

FAILURES, VALIDITY = "diagnosis_failures", "diagnosis_validity"


async def run(r: Run, summary: str, depth: int) -> DiagnosisResult:
    ask_f = r.ask(FAILURES, "diagnosis_failures.system.j2", FailureReport, depth=depth,
                  per_call=summary + "\n\nLocate the failure points, if any.")
    ask_v = r.ask(VALIDITY, "diagnosis_validity.system.j2", TaskValidity, depth=depth,
                  per_call=summary + "\n\nWas the task underspecified or ambiguous?")
    failures, validity = await asyncio.gather(ask_f, ask_v, return_exceptions=True)
    for stage, got in ((FAILURES, failures), (VALIDITY, validity)):
        if isinstance(got, JudgeError):
            r.degrade(stage, got)
        elif isinstance(got, BaseException):
            raise got
    return assemble(failures if isinstance(failures, FailureReport) else None,
                    validity if isinstance(validity, TaskValidity) else None, len(r.traj.steps))


def assemble(failures: FailureReport | None, validity: TaskValidity | None, n_steps: int) -> DiagnosisResult:
    points = []
    for fp in (failures.failure_points if failures else []):
        steps = sorted({s for s in fp.steps if 1 <= s <= max(n_steps, 1)})
        if not steps:
            continue
        points.append(FailurePointResult(steps=steps, error_code=fp.error_code.value,
                                         category=category_of(fp.error_code),
                                         what_happened=fp.what_happened, evidence=fp.evidence))
    points.sort(key=lambda p: p.steps[0])
    codes = sorted(set(validity.ambiguity_codes)) if validity else []
    cats = sorted({p.category for p in points} | ({"task_ambiguity"} if codes else set()))
    return DiagnosisResult(first_failure_step=points[0].steps[0] if points else None,
                           failure_points=points, categories=cats, task_ambiguity_codes=codes,
                           reasoning=(failures.reasoning if failures else ""))
