"""Stage 1: the rubric, written from the task alone (the judge never sees the trajectory here).

Why task-only: a rubric written after seeing an attempt bends to it (the paper's "separate
generation and scoring"). The request therefore contains the task text and start URL and nothing
else; `tests/pipeline` checks that no trajectory byte leaks into it. The reply ends with a
self-audit; `config.rubric_audit` adds a second, repairing audit call. The rubric is memoised in
the `StageCache` per (task, start URL, prompts, judge model), so a GRPO group writes it once.

A failed audit degrades the rubric itself, so the reason is cached *with* the rubric and replayed
into every rollout's `result.degraded`, not only the rollout whose call happened to run it; the
same holds for reply fields at their bound (`result.truncated`) and for the permission guard
(`guards.check_permission`: a "granted" whose quote is not in the task is overruled here, once,
and the cached rubric carries the corrected profile and the reason).
"""
from __future__ import annotations

from dataclasses import replace

from ..bounds import at_bound
from ..budget import budget_for
from ..cache import StageCache, key_of
from ..config import VerifierConfig
from ..errors import JudgeError
from ..guards import check_permission
from ..judge.base import Judge
from ..prompts import prompt_info
from ..rendering import SYSTEM_TEMPLATE, infos, render_rubric, shared_context
from ..result import DegradedStage
from ..rubrics import RubricLine, RubricProvenance, RubricSource, instruction_sha256, rubric_sha256
from ..rubrics.format import now_iso
from ..schemas import Rubric, RubricDraft
from ..trajectory import Trajectory
from .base import Run

STAGE, AUDIT = "rubric", "rubric_audit"


def judge_identity(judge: object) -> str:
    """What distinguishes one judge's answers from another's, for cache keys."""
    cfg = getattr(judge, "config", None)
    return str(getattr(cfg, "model", None) or getattr(judge, "model", None) or type(judge).__name__)


def task_context(r: Run) -> str:
    """Only the task: nothing from the trajectory."""
    return shared_context(r.traj, r.cfg, None, with_history=False)


Cached = tuple[Rubric, int, tuple[DegradedStage, ...], tuple[str, ...]]


def _guarded(r: Run, rubric: Rubric) -> Rubric:
    """The rubric with its permission profile checked against the task text."""
    profile, why = check_permission(rubric.permission, r.traj.task.instruction, rubric.critical_points)
    return rubric.model_copy(update={"permission": profile, "permission_overruled": why}) if why else rubric


def _checked(r: Run, draft: RubricDraft) -> Rubric:
    return _guarded(r, Rubric.from_draft(draft))


def provided(r: Run, given: Rubric) -> tuple[Rubric, int]:
    """A provided rubric (`verify(rubric=...)`): no call, round 0, its criteria scored as given.

    Its permission profile still goes through the permission guard. Whoever wrote the rubric
    (a benchmark, a user, a case author), permission is a fact about the task text, and the
    outcome rules read it (a stop at the critical point fails under "granted"), so a grant whose
    quote the task does not contain is overruled and recorded exactly as a judge's would be.
    """
    rubric = _guarded(r, given)
    if rubric is not given:
        r.ledger.overruled.append(rubric.permission_overruled)
    return rubric, 0


async def _generate(r: Run) -> Cached:
    """(rubric, round it finished in, degradations and reply fields at their bound that belong
    to the rubric): the cached value."""
    ctx = task_context(r)
    draft = await r.ask(STAGE, "rubric.system.j2", RubricDraft, depth=1, shared=ctx,
                        per_call="Write the rubric for this task.")
    rubric = _checked(r, draft)
    cut = tuple(f"{STAGE}:{p}" for p in at_bound(draft))
    if not r.cfg.rubric_audit:
        return rubric, 1, (), cut
    try:
        audited = await r.ask(AUDIT, "rubric_audit.system.j2", RubricDraft, depth=2, shared=ctx,
                              per_call="## Draft rubric\n" + render_rubric(rubric)
                              + "\n\nReturn the audited rubric.")
    except JudgeError as exc:
        return rubric, 2, (DegradedStage.of(AUDIT, exc),), cut
    return _checked(r, audited), 2, (), cut + tuple(f"{AUDIT}:{p}" for p in at_bound(audited))


async def run(r: Run) -> tuple[Rubric, int]:
    """The rubric and the DAG round it finished in (0 only when a finished rubric was cached).

    Joining another rollout's in-flight generation is a cache hit (no call) but not a free round:
    this rollout waited for it, so the round it finished in counts.
    """
    r.ledger.add_prompts("rubric.system.j2")
    if r.cfg.rubric_audit:
        r.ledger.add_prompts("rubric_audit.system.j2")
    key = key_of(r.traj.task.instruction, r.traj.task.start_url, r.cfg.rubric_audit,
                 *(i.sha256 for i in infos(SYSTEM_TEMPLATE)), prompt_info("rubric.system.j2").sha256,
                 prompt_info("rubric_audit.system.j2").sha256,
                 judge_identity(r.judge))
    finished = r.cache.ready(STAGE, key)
    (rubric, depth, degraded, cut), hit = await r.cache.get_or_compute(STAGE, key, lambda: _generate(r))
    r.ledger.degraded.extend(d.model_copy() for d in degraded)
    r.ledger.truncated.extend(c for c in cut if c not in r.ledger.truncated)
    if rubric.permission_overruled:
        r.ledger.overruled.append(rubric.permission_overruled)
    if hit:
        r.ledger.hit(STAGE)
    return rubric, (0 if finished else depth)


async def run_with(r: Run, rubric_judge: Judge | None) -> tuple[Rubric, int, RubricSource]:
    """`run` with the rubric judge when one is configured (`RewardSettings.rubric_judge`,
    `--rubric-judge-url`): a stronger model can write the rubric than the one that scores. The
    rubric call shares the run's ledger and cache; its key names the rubric judge's model."""
    writer = r if rubric_judge is None else replace(r, judge=rubric_judge, budget=await budget_for(rubric_judge))
    rubric, depth = await run(writer)
    return rubric, depth, RubricSource(kind="generated", rubric_sha256=rubric_sha256(rubric),
                                       model=judge_identity(writer.judge))


async def write_line(traj: Trajectory, config: VerifierConfig, judge: Judge,
                     cache: StageCache | None = None) -> RubricLine:
    """One task's rubric as a rubric-file line (`cua-verifier rubrics`): written by `judge` from the
    task alone, through the same calls, audit and permission guard as during verification.

    Raises the judge's JudgeError, and also when the audit failed: a rubric file is a reviewed
    artefact, so a rubric whose audit never ran is not written (the rerun tries the task again).
    """
    r = Run(traj, config, judge, cache if cache is not None else StageCache())
    r.budget = await budget_for(judge)
    rubric, _ = await run(r)
    if r.ledger.degraded:
        d = r.ledger.degraded[0]
        raise JudgeError(f"the rubric's {d.stage} failed ({d.reason}): not written", stage=d.stage)
    prompts = sorted(r.ledger.prompts.values(), key=lambda p: p.id)
    model = ", ".join(sorted(r.ledger.models)) or judge_identity(judge)
    task = traj.task
    return RubricLine(task_id=task.id, instruction_sha256=instruction_sha256(task.instruction),
                      instruction=task.instruction, start_url=task.start_url, rubric=rubric,
                      provenance=RubricProvenance(model=model, prompts=prompts, written_at=now_iso(),
                                                  audited=config.rubric_audit))
