"""Stage 1: the rubric, written from the task alone (the judge never sees the trajectory here).

Why task-only: a rubric written after seeing an attempt bends to it (the paper's "separate
generation and scoring"). The request therefore contains the task text and start URL and nothing
else; `tests/pipeline` checks that no trajectory byte leaks into it. The reply ends with a
self-audit; `config.rubric_audit` adds a second, repairing audit call. The rubric is memoised in
the `StageCache` per (task, start URL, prompts, judge model), so a GRPO group writes it once.
"""
from __future__ import annotations

from ..cache import key_of
from ..errors import JudgeError
from ..prompts import prompt_info
from ..rendering import render_rubric, shared_context
from ..schemas import Rubric, RubricDraft
from .base import Run

STAGE, AUDIT = "rubric", "rubric_audit"


def judge_identity(judge: object) -> str:
    """What distinguishes one judge's answers from another's, for cache keys."""
    cfg = getattr(judge, "config", None)
    return str(getattr(cfg, "model", None) or getattr(judge, "model", None) or type(judge).__name__)


def task_context(r: Run) -> str:
    """Only the task: nothing from the trajectory."""
    return shared_context(r.traj, r.cfg, None, with_history=False)


async def _generate(r: Run) -> tuple[Rubric, int]:
    ctx = task_context(r)
    draft = await r.ask(STAGE, "rubric.system.j2", RubricDraft, depth=1, shared=ctx,
                        per_call="Write the rubric for this task.")
    rubric = Rubric.from_draft(draft)
    if not r.cfg.rubric_audit:
        return rubric, 1
    try:
        audited = await r.ask(AUDIT, "rubric_audit.system.j2", RubricDraft, depth=2, shared=ctx,
                              per_call="## Draft rubric\n" + render_rubric(rubric)
                              + "\n\nReturn the audited rubric.")
    except JudgeError as exc:
        r.degrade(AUDIT, exc)
        return rubric, 2
    return Rubric.from_draft(audited), 2


async def run(r: Run) -> tuple[Rubric, int]:
    """The rubric and the DAG round it finished in (0 when it came from the cache)."""
    r.ledger.add_prompts("rubric.system.j2")
    if r.cfg.rubric_audit:
        r.ledger.add_prompts("rubric_audit.system.j2")
    key = key_of(r.traj.task.instruction, r.traj.task.start_url, r.cfg.rubric_audit,
                 prompt_info("rubric.system.j2").sha256, prompt_info("rubric_audit.system.j2").sha256,
                 judge_identity(r.judge))
    (rubric, depth), hit = await r.cache.get_or_compute(STAGE, key, lambda: _generate(r))
    if hit:
        r.ledger.hit(STAGE)
        return rubric, 0
    return rubric, depth
