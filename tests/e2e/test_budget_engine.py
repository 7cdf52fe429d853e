"""Every call fits the judge's context, against the real CPU judge at its 32k context (issue 24).

A 150-step, 150-screenshot run with long thoughts (about 600 characters a step), under a history
character budget raised to hold them all (as for a long-context judge), does not fit as built:
the token budget must shrink the calls (recorded in `result.history.trims`), every stage must be
scored (no 400 for a prompt over the context, no stage refused), and the prompt tokens vLLM
reports must stay within the context. The judge's tokenizer counts English about as a real
Qwen tokenizer does (`serving/tiny_model.py`), so the sizes are those a real 32k judge meets.
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
STEPS_N = 150


async def test_a_long_run_is_trimmed_to_fit_and_says_so(engine):
    base = synthetic_trajectory(STEPS_N, task_id=f"long-{STEPS_N}")
    thought = "I compare the trail's length, the dog policy and the distance from Boulder before moving on. "
    traj = base.model_copy(update={"steps": [s.model_copy(update={"thought": f"Step {s.index}: " + thought * 6})
                                             for s in base.steps]})
    assert len(traj.screenshots) == STEPS_N
    inner = OpenAICompatJudge(engine.judge_config(preset="cpu-tiny"))
    spy = SpyJudge(inner)
    t0 = time.monotonic()
    try:
        # relevance 8 screenshots a call (the most; 19 calls, not 150): the same shared prompt, less CI time
        cfg = VerifierConfig(relevance_batch_size=8, max_history_chars=200_000)
        result = await verify(traj, cfg, judge=spy)
    finally:
        await spy.aclose()
    print(f"\n[budget] {STEPS_N} steps verified in {time.monotonic() - t0:.0f}s, {result.usage.calls} calls; "
          f"trims: {[(t.stage, t.cuts, t.tokens_before, t.tokens_after, t.reply_tokens) for t in result.history.trims]}")
    assert_plumbing(result, spy, traj, model=engine.model)
    h = result.history
    cut = [t for t in h.trims if t.cuts]
    assert h.context_tokens == 32768 and cut and h.thoughts != "full"
    for t in h.trims:  # a trim is a cut in the fixed order, or a reply room below the reserve
        assert t.cuts == [s for s in STEPS if s in t.cuts]
        assert t.tokens_after < t.tokens_before if t.cuts else t.reply_tokens is not None
    overflow = ("ContextOverflowError", "SplitNeeded", "JudgeTruncatedError", "maximum context", "input tokens")
    assert not any(w in d.reason for d in result.degraded for w in overflow), result.degraded  # none refused
    per_call = [s.prompt_tokens / s.calls for s in result.usage.per_stage.values() if s.calls]
    assert max(per_call) < 32768
