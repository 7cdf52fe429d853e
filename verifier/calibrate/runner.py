"""Running `verify()` over a calibration suite with bounded concurrency.

Why a run per case rather than a report straight away: the report is pure math over (case, result)
pairs and is unit-tested on its own; this module only does the I/O. A case whose trajectory is
unavailable or whose verification fails becomes a `CaseRun` with an error, never a verdict: a
judge outage must not read as "the judge said failure" in a false-negative count.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from ..cache import StageCache
from ..config import VerifierConfig
from ..errors import CuaVerifierError
from ..judge.base import Judge
from ..result import VerificationResult
from ..rubrics import RubricPlan
from .suite import Case

log = logging.getLogger(__name__)


class CaseRun(BaseModel):
    """What running one case gave: a result, or why there is none."""

    case: str
    result: VerificationResult | None = None
    error: str | None = None
    unavailable: bool = False
    """The case's data is absent (not a judge failure)."""
    wall_s: float = 0.0


async def run_case(case: Case, *, judge: Judge, config: VerifierConfig, cache: StageCache,
                   rubrics: RubricPlan | None = None, rubric_judge: Judge | None = None) -> CaseRun:
    """One case verified. A case's own rubric (its `expected.json` names one) is part of the case and
    wins; otherwise `rubrics` (--rubrics / --rubrics-only) and the rubric judge decide."""
    from ..pipeline import verify

    if case.unavailable:
        return CaseRun(case=case.name, error=case.unavailable, unavailable=True)
    t0 = time.perf_counter()
    try:
        traj = await asyncio.to_thread(case.load)
        kwargs: dict[str, Any] = ({"rubric": case.provided_rubric} if case.provided_rubric is not None else
                        (rubrics or RubricPlan()).verify_kwargs(traj.task, rubric_judge=rubric_judge))
        result = await verify(traj, config, judge=judge, cache=cache, **kwargs)
    except CuaVerifierError as exc:
        return CaseRun(case=case.name, error=f"{type(exc).__name__}: {exc}"[:2000],
                       wall_s=time.perf_counter() - t0)
    return CaseRun(case=case.name, result=result, wall_s=time.perf_counter() - t0)


async def run_suite(cases: Sequence[Case], *, judge: Judge, config: VerifierConfig | None = None,
                    concurrency: int = 4, on_done: Callable[[CaseRun], None] | None = None,
                    rubrics: RubricPlan | None = None, rubric_judge: Judge | None = None) -> list[CaseRun]:
    """One `CaseRun` per case, in the order of `cases`; at most `concurrency` verifications at once."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    cfg = config or VerifierConfig()
    gate, cache = asyncio.Semaphore(concurrency), StageCache()

    async def one(case: Case) -> CaseRun:
        async with gate:
            run = await run_case(case, judge=judge, config=cfg, cache=cache, rubrics=rubrics,
                                 rubric_judge=rubric_judge)
        if run.error:
            log.warning("calibration case %s not scored: %s", case.name, run.error)
        if on_done is not None:
            on_done(run)
        return run

    return list(await asyncio.gather(*(one(c) for c in cases)))
