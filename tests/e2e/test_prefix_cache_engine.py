"""The prefix-first prompt layout, measured by vLLM itself: prefix-cache hits from the real CPU
server's ``/metrics`` counters (``prefix_cache_hits_total / prefix_cache_queries_total``).

Goals (issue 10): at least 70% of prompt tokens served from the cache for one trajectory on a cold
cache, at least 85% for a group of 8 rollouts of one task. The shared session server is reused; its
prefix cache is emptied first (``/reset_prefix_cache``), so earlier tests cannot warm it. Rollouts
are the HTTP benchmark's (`verifier.perf.shots`): one task, histories that differ per rollout.
Verdicts are random and never asserted; every rollout must finish.
"""
from __future__ import annotations

import asyncio

import pytest

from verifier.cache import StageCache
from verifier.config import VerifierConfig
from verifier.judge.openai_compat import OpenAICompatJudge
from verifier.perf.figures import hit_rate
from verifier.perf.run import read_counters
from verifier.perf.shots import source_pngs, trajectory
from verifier.pipeline import verify
from verifier.result import VerificationResult

pytestmark = pytest.mark.engine

GROUP = 8
STEPS = 3


async def test_prefix_cache_hits_for_one_trajectory_and_a_group(engine):
    group = [trajectory(STEPS, source_pngs(), run=f"prefix-{k}") for k in range(GROUP)]
    judge = OpenAICompatJudge(engine.judge_config())
    cache = StageCache()  # the group shares its rubric, as the TRL reward does
    try:
        engine.reset_prefix_cache()
        cold = read_counters(engine.base_url)
        first = await verify_one(group[0], judge, cache)
        one = hit_rate(cold, read_counters(engine.base_url))
        rest = await asyncio.gather(*(verify_one(t, judge, cache) for t in group[1:]))
        everything = hit_rate(cold, read_counters(engine.base_url))
    finally:
        await judge.aclose()
    assert all(isinstance(r, VerificationResult) for r in [first, *rest])
    assert one is not None and one >= 0.70, f"one trajectory, cold cache: {one:.0%} of prompt tokens hit"
    assert everything is not None and everything >= 0.85, f"group of {GROUP}: {everything:.0%} hit"


async def verify_one(traj, judge, cache):
    return await verify(traj, VerifierConfig(), judge=judge, cache=cache)
