"""The prefix-first prompt layout, measured by vLLM itself: prefix-cache hits from the real CPU
server's ``/metrics`` counters (``prefix_cache_hits_total / prefix_cache_queries_total``).

Goals (issue 10): at least 70% of prompt tokens served from the cache for one trajectory on a cold
cache, at least 85% for a group of 8 rollouts of one task. The shared session server is reused; its
prefix cache is emptied first (``/reset_prefix_cache``), so earlier tests cannot warm it.

Why prefill only: the random-weight judge fills every string to its maximum, so a full group of 8
decodes for minutes on CPU (the HTTP benchmark, ``recipes/benchmark_http.py --engine --group 8``,
measures that). Here every request the pipeline makes goes to vLLM exactly as rendered (system
prompt, context, instructions, images) with a one-token budget and no grammar, which is what the
prefix cache sees, while `ScriptedJudge` supplies the replies the pipeline continues with. Rollouts are the
benchmark's (`verifier.perf.shots`): one task, histories that differ per rollout.
"""
from __future__ import annotations

import asyncio

import pytest

from verifier.cache import StageCache
from verifier.config import VerifierConfig
from verifier.judge.base import Sampling
from verifier.judge.endpoints import Tally
from verifier.judge.openai_compat import OpenAICompatJudge
from verifier.judge.schema import json_schema_for
from verifier.perf.figures import hit_rate
from verifier.perf.run import read_counters
from verifier.perf.shots import source_pngs, trajectory
from verifier.pipeline import verify
from verifier.testing import ScriptedJudge

pytestmark = pytest.mark.engine

GROUP = 8
STEPS = 2
# No diagnosis calls: they reuse the context like the other stages (they would only raise the hit
# rate) and cost CI time.
CONFIG = VerifierConfig(diagnosis=False)


class PrefillProbe:
    """A `Judge` that sends each call's real request to vLLM (one completion token) and answers
    from `ScriptedJudge`."""

    def __init__(self, engine_judge: OpenAICompatJudge) -> None:
        self.engine = engine_judge
        self.scripted = ScriptedJudge()
        self.sent = 0

    async def complete(self, messages, output_model, *, stage, sampling=None):
        rendered = await asyncio.to_thread(self.engine._render, messages, output_model)
        request = self.engine._request(rendered, output_model, json_schema_for(output_model),
                                       Sampling(temperature=0.0), max_tokens=1)
        request.pop("response_format")  # the cache sees the prompt only; a grammar would only cost compile time
        await self.engine._pool.send(request, Tally(), stage=stage)
        self.sent += 1
        return await self.scripted.complete(messages, output_model, stage=stage, sampling=sampling)

    async def aclose(self) -> None:
        await self.engine.aclose()


async def test_prefix_cache_hits_for_one_trajectory_and_a_group(engine):
    group = [trajectory(STEPS, source_pngs(), run=f"prefix-{k}") for k in range(GROUP)]
    probe = PrefillProbe(OpenAICompatJudge(engine.judge_config()))
    cache = StageCache()  # the group shares its rubric, as the TRL reward does
    try:
        engine.reset_prefix_cache()
        cold = read_counters(engine.base_url)
        await verify(group[0], CONFIG, judge=probe, cache=cache)
        one = hit_rate(cold, read_counters(engine.base_url))
        first_calls = probe.sent
        await asyncio.gather(*(verify(t, CONFIG, judge=probe, cache=cache) for t in group[1:]))
        everything = hit_rate(cold, read_counters(engine.base_url))
    finally:
        await probe.aclose()
    print(f"\n[prefix cache] one trajectory {one:.0%}, group of {GROUP} {everything:.0%} ({probe.sent} requests)")
    assert first_calls >= 8 and probe.sent > first_calls * (GROUP - 1)  # every stage ran, for every rollout
    assert one is not None and one >= 0.70, f"one trajectory, cold cache: {one:.0%} of prompt tokens hit"
    assert everything is not None and everything >= 0.85, f"group of {GROUP}: {everything:.0%} hit"
