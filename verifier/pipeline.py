"""`verify()`: the Universal Verifier as an async DAG of judge calls.

Rounds (each a set of concurrent calls; the numbers are the worst case):

    1 rubric (task only)              -- cached per task: 0 rounds for the rest of a GRPO group
    2 rubric audit                    -- only with config.rubric_audit
    3 relevance (one per distinct screenshot)  ||  action-only scoring
    4 evidence (one per analysed screenshot; each starts as soon as its criterion set is certain)
    5 conditions (only when the rubric's groups are not determinate)  ||  reality notes (no claims)
    6 rescoring x V (sees the final screenshots; the reality notes are awaited only to check it)
    7 outcome x V  ||  side effects + critical points x V (both read the rescoring median's scores)
    8 diagnosis: failure points || task ambiguity

The side-effect check waits for the rescoring median so that it sees the scores and does not
charge a fault a criterion already charged (issue 9, S1); it runs beside the outcome votes, so the
bound stays `usage.rounds <= 8`. Calls = 1 + A + ceil(D/b) + 1 + S + C + 1 + V + V + V + 2*diag (see
README.md, "Call count and rounds"). Stages the run can do without degrade (listed in `result.degraded`); the
rubric, and rescoring *and* action scoring both failing, or outcome votes too few to decide a
strict majority of V (`JudgeUndecidedError`; all failing raises the vote's own error), raise
the judge's `JudgeError`.
"""
from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from . import vetoes
from .budget import budget_for
from .cache import StageCache
from .config import VerifierConfig
from .errors import JudgeError
from .grouping import decide_all, group, representatives
from .guards import note_records, reports_absence
from .judge.base import Judge
from .rendering import fence, shared_context, system_prompt, truncations
from .result import (
    PenaltyResult,
    RelevanceResult,
    VerificationResult,
)
from .rubrics import RubricSource, rubric_sha256
from .schemas import ActionScores, RealityCheck, Rescoring, Rubric
from .scoring import (
    apply_penalties,
    hallucination_suspected,
    median_index,
    process_success,
    rubric_score,
)
from .stages import (
    action_scoring,
    conditions,
    diagnosis,
    evidence,
    outcome,
    reality,
    relevance,
    rescoring,
    rubric,
    side_effects,
)
from .stages.base import Run
from .tables import criteria_table, history_of
from .trajectory import Trajectory

MAX_ROUNDS = 8


def expected_calls(*, distinct: int, analysed: int, config: VerifierConfig, conditions_call: bool = False,
                   rubric_cached: bool = False, relevance_cached: int = 0) -> int:
    """Judge calls of one verification without failures (the formula in README.md, "Call count and rounds").

    calls = R + A + ceil((D - cached) / b) + 1 + S + C + 1 + V + V + V + 2*diag, where R = 1 (0 when
    the rubric came from the cache), A = rubric audit, D = distinct screenshots, b = relevance
    batch size, S = analysed screenshots, C = 1 if conditions needed the judge, 1 = the reality
    notes, V = votes (of rescoring, side effects and outcome each).
    """
    cfg = config
    return ((0 if rubric_cached else 1 + int(cfg.rubric_audit))
            + math.ceil(max(distinct - relevance_cached, 0) / cfg.relevance_batch_size)
            + 1 + analysed + int(conditions_call) + 1 + 3 * cfg.votes + 2 * int(cfg.diagnosis))


async def _soft(r: Run, stage: str, fn: Any, *args: Any) -> Any:
    """Run a stage the run can do without: a JudgeError degrades it to None.

    Takes the function, not a coroutine, so a task cancelled before it starts leaves no
    never-awaited coroutine behind (a RuntimeWarning when a failed run cancels its background).
    """
    try:
        return await fn(*args)
    except JudgeError as exc:
        r.degrade(stage, exc)
        return None


async def _relevance_and_evidence(r: Run, hash_groups: dict[str, list[int]], d0: int):
    """Stream relevance rows; start each screenshot's evidence call once its criteria are certain."""
    assert r.rubric is not None
    cfg, ids = r.cfg, r.rubric.ids()
    reps = representatives(hash_groups)  # number -> hash
    order = sorted(reps)
    batches = [tuple(order[i:i + cfg.relevance_batch_size]) for i in range(0, len(order), cfg.relevance_batch_size)]
    tasks = {r.spawn(relevance.score(r, b, tuple(reps[n] for n in b), d0 + 1)): b for b in batches}
    known: dict[int, dict[str, int]] = {}
    pending, started, ev_tasks, row_depth = set(order), set(), [], d0
    kw = {"k": cfg.top_k, "prune": cfg.prune, "min_relevance": cfg.min_relevance}
    while tasks:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in done:
            batch = tasks.pop(t)
            pending.difference_update(batch)
            try:
                rows, free = t.result()
            except JudgeError as exc:
                r.degrade(relevance.STAGE, f"screenshots {list(batch)}: {type(exc).__name__}: {exc}")
                continue
            known.update(rows)
            row_depth = max(row_depth, d0 if free else d0 + 1)  # awaiting an in-flight row is a round
        for n, cids in decide_all([n for n in sorted(known) if n not in started], known, pending, ids,
                                  **kw).items():
            if cids is None:
                continue
            started.add(n)
            if cids:
                same = [m for m in hash_groups[reps[n]] if m != n]
                ev_tasks.append(r.spawn(
                    _soft(r, evidence.STAGE, evidence.analyse, r, n, cids, same, row_depth + 1)))
    found = [ev for got in await asyncio.gather(*ev_tasks) if got for ev in got]
    groups = group(known, ids, **kw)
    return known, groups, found, (row_depth + 1 if ev_tasks else row_depth)


async def verify(trajectory: Trajectory, config: VerifierConfig | None = None, *, judge: Judge,
                 cache: StageCache | None = None, rubric: Rubric | None = None,
                 rubric_source: RubricSource | None = None, rubric_judge: Judge | None = None) -> VerificationResult:
    """Verify one trajectory. Raises JudgeError when an indispensable stage fails.

    Args:
        trajectory: the agent run to judge.
        config: pipeline options (defaults: VerifierConfig()).
        judge: any `Judge` (OpenAICompatJudge, ScriptedJudge, ...).
        cache: share one StageCache across calls (e.g. a GRPO group) to reuse rubric and relevance rows.
        rubric: a provided rubric (a benchmark's, or a calibration case's) scored instead of writing one;
            no rubric call is made. It is taken as given: the principles still decide what it may demand,
            and a "granted" permission still needs its quote in the task text (`guards.check_permission`).
        rubric_source: where `rubric` came from (a rubric file's path and hash, an inline column), recorded
            in `result.rubric_source`; default "provided".
        rubric_judge: the judge that writes the rubric when none is provided (default: `judge`).
    """
    r = Run(trajectory, config or VerifierConfig(), judge, cache if cache is not None else StageCache(),
            provided_rubric=rubric)
    try:
        return await _verify(r, time.perf_counter(), rubric_source, rubric_judge)
    finally:
        for task in r.background:
            if not task.done():
                task.cancel()


def _prepare_images(r: Run) -> None:
    """Let a judge that encodes screenshots (`OpenAICompatJudge.prepare_images`) hash and encode
    them in a worker thread while the rubric call, which shows no image, is in flight."""
    prepare = getattr(r.judge, "prepare_images", None)
    if callable(prepare) and r.traj.screenshots:
        r.spawn(asyncio.to_thread(prepare, list(r.traj.screenshots)))


async def _verify(r: Run, started_at: float, source: RubricSource | None,
                  rubric_judge: Judge | None) -> VerificationResult:
    trajectory, cfg = r.traj, r.cfg
    _prepare_images(r)
    r.budget = await budget_for(r.judge)
    if r.budget is not None:  # a run that can never fit is refused before its first call
        core = shared_context(trajectory, cfg, None, cut=3)
        await asyncio.to_thread(r.budget.check_core, system_prompt(None).text, core)
    given = r.provided_rubric
    if given is not None:
        r.rubric, d0 = rubric.provided(r, given)
        source = (source or RubricSource(kind="provided")).model_copy(
            update={"rubric_sha256": rubric_sha256(r.rubric)})
    else:
        r.rubric, d0, source = await rubric.run_with(r, rubric_judge)
    r.shared = shared_context(trajectory, cfg, r.rubric)
    rb, ids = r.rubric, r.rubric.ids()
    hash_groups = trajectory.distinct_screenshots()

    action_task = r.spawn(_soft(r, action_scoring.STAGE, action_scoring.run, r, d0 + 1))
    known, groups, found, d_ev = await _relevance_and_evidence(r, hash_groups, d0)
    action: ActionScores | None = await action_task
    d_ev = max(d_ev, d0 + 1)
    ev_by = evidence.by_criterion(found)
    ev_text = evidence.render(rb, ev_by)
    r.evidence_text = (ev_text, evidence.render(rb, ev_by, lean=True))

    images = rescoring.final_images(r, hash_groups)
    shown = rescoring.shown_numbers(r, hash_groups, [n for evs in ev_by.values() for e in evs for n in e.screenshots])
    notes_task = r.spawn(_soft(r, reality.STAGE, reality.run, r, ev_by, images, d_ev + 1))  # beside conditions
    status, d_cond = await conditions.run(r, ev_by, action, ev_text, d_ev + 1)
    applies = {c.id: status.get(c.id, (True, "none"))[0] for c in rb.criteria}
    d_resc = d_cond + 1
    action_earned = action_scoring.earned(rb, action) if action is not None else None
    absent = {cid: {n for e in evs if reports_absence(e.item.visible, e.item.discrepancies, e.item.blocker_visible)
                    for n in e.screenshots} for cid, evs in ev_by.items()}
    run_scores, canonical, earned, before, notes = await _rescore(r, applies, action, action_earned, ev_text,
                                                                  images, d_resc, shown, absent, notes_task)

    scores_text = rescoring.render_scores(rb, applies, canonical, earned)
    side_task = r.spawn(side_effects.vote_all(r, scores_text, ev_text, images, d_resc + 1, shown))
    out_call = outcome.per_call_text(scores_text, ev_text, len(images))
    votes, ok, replies = await outcome.vote_all(r, out_call, images, d_resc + 1)
    effects = await side_task
    tags = {i.criterion_id: i.evidence_tag for i in canonical.items} if canonical is not None else {}
    vetoed = vetoes.decide(trajectory, rb, applies, earned, tags, off=set(cfg.vetoes_off))
    forced = (effects.forced() if effects else []) + [v.text() for v in vetoed]
    success = outcome.decide(r, votes, forced_failure=bool(forced))  # undecided votes raise
    forced += outcome.check_overrules(replies) if not success else []
    chosen = next((v for v in ok if outcome.vote_value(v) == success), ok[0])
    reasoning = (f"[forced failure: {'; '.join(forced)}] " if forced else "") + chosen.reasoning

    n_steps, m = len(trajectory.steps), len(trajectory.screenshots)
    penalties = [PenaltyResult(**p.model_dump(exclude={"steps", "screenshots"}),  # numbers outside the run dropped
                               steps=sorted({s for s in p.steps if 1 <= s <= n_steps}),
                               screenshots=sorted({s for s in p.screenshots if s <= m}))
                 for p in (effects.penalties if effects else [])]
    total_max = sum(c.max_points for c in rb.criteria if applies[c.id])
    score = apply_penalties(before, [p.points for p in penalties], total_max=total_max,
                            mode=cfg.penalty_mode, fraction=cfg.penalty_fraction)
    diag = None
    if cfg.diagnosis:
        summary = "\n\n".join([scores_text, ev_text, f"## Outcome\nsuccess={success}\n"
                               + fence(chosen.reasoning, "outcome reasoning"),
                               "## Penalties\n" + fence("; ".join(forced) or "none", "penalties")])
        diag = await diagnosis.run(r, summary, max(d_resc + 1, d_ev + 1) + 1)

    action_score = (rubric_score(rescoring.points(rb, applies, action_earned))
                    if action_earned is not None else None)
    table = criteria_table(r, status, applies, earned, action, action_earned, canonical, ev_by, notes)
    ledger = r.ledger
    usage = ledger.summary(wall_s=time.perf_counter() - started_at)
    return VerificationResult(
        trajectory_id=trajectory.source_path or trajectory.task.id,
        task_id=trajectory.task.id, task=trajectory.task.instruction,
        process_score=score, process_score_before_penalties=before,
        process_success=process_success(score, cfg.process_threshold), action_only_score=action_score,
        grounded=bool(trajectory.screenshots),
        hallucination_suspected=hallucination_suspected(action_score, before, gap=cfg.hallucination_gap),
        rescoring_scores=run_scores, outcome_success=success, outcome_votes=votes,
        outcome_reasoning=reasoning, primary_intent=chosen.primary_intent, nitpicks=chosen.nitpicks,
        critical_issues=chosen.critical_issues,
        critical_point_violation=bool(effects and effects.violation) or any(v.violation for v in vetoed),
        forced_failure=forced,
        permission_profile=rb.permission.model_dump(mode="json"), permission_overruled=rb.permission_overruled,
        overruled=ledger.overruled + (effects.rejected if effects else []), truncated=list(ledger.truncated),
        unsupported_claims=effects.unsupported if effects else [], history=history_of(r),
        criteria=table, penalties=penalties, side_effects_reasoning=effects.reasoning if effects else "",
        relevance=RelevanceResult(criteria=list(ids), matrix=relevance.full_matrix(known, hash_groups, ids, m),
                                  duplicates=[nums for nums in hash_groups.values() if len(nums) > 1]),
        topk=groups, rubric_self_audit=rb.self_audit, diagnosis=diag, degraded=list(ledger.degraded),
        truncations=truncations(trajectory, cfg),
        usage=usage, config=cfg.model_dump(mode="json"), models=sorted(ledger.models), rubric_source=source,
        prompts=sorted(ledger.prompts.values(), key=lambda p: p.id))


async def _rescore(r: Run, applies: dict[str, bool], action: ActionScores | None,
                   action_earned: dict[str, float] | None, ev_text: str, images: list, depth: int,
                   shown: set[int], absent: dict[str, set[int]], notes_task: asyncio.Task):
    """V rescoring runs -> (run scores, canonical table or None, earned per criterion, process score,
    the reality call's notes or None).

    The process score (before penalties) is the lower median over valid runs: of the run scores
    (`rescoring_median="run"`) or eq. 1 over per-criterion medians (`"criterion"`). The runs go out
    beside the reality call (`notes_task`), whose notes are awaited only to check the runs' replies.
    """
    assert r.rubric is not None
    rb, ids = r.rubric, r.rubric.ids()
    applicable = tuple(cid for cid in ids if applies[cid])
    if not applicable:
        raise JudgeError("no rubric criterion applies to this attempt", stage=conditions.STAGE)
    na = [cid for cid in ids if not applies[cid]]
    per_call = rescoring.per_call_text(rb, applicable, na, action_scoring.render(rb, action), ev_text, len(images))
    runs = await asyncio.gather(*(rescoring.run_once(r, applicable, per_call, images, depth, i)
                                  for i in range(r.cfg.votes)), return_exceptions=True)
    notes: RealityCheck | None = await notes_task
    r.ledger.overruled.extend(note_records(notes, shown))
    valid: list[Rescoring] = [x for x in runs if isinstance(x, Rescoring)]
    errors = [x for x in runs if not isinstance(x, Rescoring)]
    for e in errors:
        if not isinstance(e, JudgeError):
            raise e
        r.degrade(rescoring.RUN if valid else rescoring.STAGE, e)
    if valid:
        scored = [rescoring.score_of(rb, applies, x, notes, shown, absent) for x in valid]
        r.ledger.overruled.extend(dict.fromkeys(rec for _, _, recs in scored for rec in recs))
        run_scores = [s for s, _, _ in scored]
        if r.cfg.rescoring_median == "criterion":
            table, earned = rescoring.per_criterion_median(applicable, valid, [e for _, e, _ in scored])
            return run_scores, table, earned, rubric_score(rescoring.points(rb, applies, earned)), notes
        best = median_index(run_scores)
        return run_scores, valid[best], scored[best][1], run_scores[best], notes
    if action_earned is not None:
        r.degrade(rescoring.STAGE, "every rescoring run failed: process score falls back to action-only scores")
        fallback = rubric_score(rescoring.points(rb, applies, action_earned))
        return [fallback], None, action_earned, fallback, notes
    raise errors[0]


def verify_sync(trajectory: Trajectory, config: VerifierConfig | None = None, *, judge: Judge,
                cache: StageCache | None = None) -> VerificationResult:
    """Blocking wrapper around `verify` (not for use inside a running event loop)."""
    return asyncio.run(verify(trajectory, config, judge=judge, cache=cache))
