"""Stage 10: failure diagnosis with the 7-category / 24-subcategory error taxonomy.

Two independent calls run together: failure points (categories 1-6, localised to step numbers)
and task ambiguity (category 7). Neither changes a score. Each may fail alone; the result then
lists it in `degraded`. Step numbers outside the trajectory are dropped in code rather than trusted.

Tool codes (issue 9, H3): the failure call is shown the actions available to the agent: the
declared tool list (`task.metadata["tools"]`, names or {"name": ...} objects, see
examples/README.md) or, when none is declared, the action names the run used. Code 6.2 (a tool
that does not exist) is decided in code, from the declared list only: a judge cannot know what a
harness offered, and an observed list would contain the invented tool itself. Judge-made 6.2
points are dropped. A material failure no code fits gets "other".
"""
from __future__ import annotations

import asyncio

from ..errors import JudgeError
from ..rendering import fence
from ..result import DiagnosisResult, FailurePointResult
from ..schemas import ErrorCode, FailureReport, TaskValidity, category_of
from ..trajectory import Trajectory
from .base import Run

FAILURES, VALIDITY = "diagnosis_failures", "diagnosis_validity"


def declared_tools(traj: Trajectory) -> list[str] | None:
    """Tool names the harness declared for this run, or None when it declared none."""
    raw = traj.task.metadata.get("tools")
    if not isinstance(raw, list) or not raw:
        return None
    names = [t.get("name") if isinstance(t, dict) else t for t in raw]
    return [str(n) for n in names if n]


def render_tools(traj: Trajectory) -> str:
    declared = declared_tools(traj)
    if declared is not None:
        return "## Actions available to the agent (declared)\n" + fence(", ".join(declared), "declared tools")
    used = sorted({s.action for s in traj.steps})
    return ("## Actions available to the agent\nNot declared. Action names this run used:\n"
            + fence(", ".join(used) or "(none)", "observed actions"))


def undeclared_tool_points(traj: Trajectory) -> list[FailurePointResult]:
    """Code 6.2, decided in code: one point per undeclared action name, with the steps that called it."""
    declared = declared_tools(traj)
    if declared is None:
        return []
    steps: dict[str, list[int]] = {}
    for st in traj.steps:
        if st.action not in declared:
            steps.setdefault(st.action, []).append(st.index)
    return [FailurePointResult(steps=nums[:10], error_code=ErrorCode.hallucinated_tool.value,
                               category=category_of(ErrorCode.hallucinated_tool),
                               what_happened=f"called {name[:80]!r}, which is not among the declared tools",
                               evidence="decided in code from task.metadata['tools']")
            for name, nums in steps.items()]


async def run(r: Run, summary: str, depth: int) -> DiagnosisResult:
    ask_f = r.ask(FAILURES, "diagnosis_failures.system.j2", FailureReport, depth=depth,
                  per_call=summary + "\n\n" + render_tools(r.traj) + "\n\nLocate the failure points, if any.")
    ask_v = r.ask(VALIDITY, "diagnosis_validity.system.j2", TaskValidity, depth=depth,
                  per_call=summary + "\n\nWas the task underspecified or ambiguous?")
    failures, validity = await asyncio.gather(ask_f, ask_v, return_exceptions=True)
    for stage, got in ((FAILURES, failures), (VALIDITY, validity)):
        if isinstance(got, JudgeError):
            r.degrade(stage, got)
        elif isinstance(got, BaseException):
            raise got
    return assemble(failures if isinstance(failures, FailureReport) else None,
                    validity if isinstance(validity, TaskValidity) else None, len(r.traj.steps),
                    undeclared_tool_points(r.traj))


def assemble(failures: FailureReport | None, validity: TaskValidity | None, n_steps: int,
             code_points: list[FailurePointResult] | None = None) -> DiagnosisResult:
    points = list(code_points or [])
    for fp in (failures.failure_points if failures else []):
        steps = sorted({s for s in fp.steps if 1 <= s <= max(n_steps, 1)})
        if not steps or fp.error_code is ErrorCode.hallucinated_tool:  # 6.2 is decided in code
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
