"""Every call fits the judge's context, against the real CPU judge at its 32k context (issue 24).

A 40-step, 40-screenshot run with long thoughts does not fit as built: the budget must shrink
the calls (recorded in `result.history.trims`), every request must be answered (no 400 for a
prompt over the context), and the prompt tokens vLLM reports must stay within the context.
(Since the shared system prompt grew to about 30k characters, from about 55 such steps on this
judge's 512-token vocabulary the failure diagnosis, with its 8,192-token reply room, no longer fits
even at its smallest: the budget degrades that stage with `ContextOverflowError`, unsent.)
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pipeline_support import SpyJudge, assert_plumbing, synthetic_trajectory

from verifier.budget import STEPS
from verifier.config import VerifierConfig
from verifier.judge.openai_compat import OpenAICompatJudge
from verifier.pipeline import verify

pytestmark = pytest.mark.engine
STEPS_N = 40


async def test_a_long_run_is_trimmed_to_fit_and_says_so(engine):
    base = synthetic_trajectory(STEPS_N, task_id=f"long-{STEPS_N}")
    thought = "I compare the trail's length, the dog policy and the distance from Boulder before moving on. "
    traj = base.model_copy(update={"steps": [s.model_copy(update={"thought": f"Step {s.index}: " + thought * 4})
                                             for s in base.steps]})
    inner = OpenAICompatJudge(engine.judge_config(preset="cpu-tiny"))
    spy = SpyJudge(inner)
    t0 = time.monotonic()
    try:
        # relevance 8 screenshots a call (5 calls, not 40): the same prompts, a third of the CI time
        result = await verify(traj, VerifierConfig(relevance_batch_size=8), judge=spy)
    finally:
        await spy.aclose()
    print(f"\n[budget] {STEPS_N} steps verified in {time.monotonic() - t0:.0f}s, {result.usage.calls} calls; "
          f"trims: {[(t.stage, t.cuts, t.tokens_before, t.tokens_after) for t in result.history.trims]}")
    assert_plumbing(result, spy, traj, model=engine.model)
    h = result.history
    assert h.context_tokens == 32768 and h.trims and h.thoughts != "full"
    for t in h.trims:
        assert t.cuts == [s for s in STEPS if s in t.cuts] and t.tokens_after < t.tokens_before
    assert not any("exceeds" in d.reason or "maximum context" in d.reason for d in result.degraded), result.degraded
    per_call = [s.prompt_tokens / s.calls for s in result.usage.per_stage.values() if s.calls]
    assert max(per_call) < 32768
