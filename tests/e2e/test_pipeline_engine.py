"""The whole verifier pipeline against the real vLLM server (tiny random-weight Qwen2-VL).

Each verification must run every stage for real, with schema-valid replies, screenshots sent and
usage recorded (`pipeline_support.assert_plumbing`); verdicts are random and never asserted.
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pipeline_support import SpyJudge, assert_plumbing, synthetic_trajectory
from suite_env import missing, shared_data_dir

from verifier.cache import StageCache
from verifier.config import VerifierConfig
from verifier.judge.openai_compat import OpenAICompatJudge
from verifier.loaders import load_trajectory
from verifier.pipeline import verify

pytestmark = pytest.mark.engine

TRAJ_ROOT = shared_data_dir() / "trajectories"
#: Samples whose folder is not itself the run (and the loader options a run without its task needs).
#: Of the agent-framework formats only BrowserGym, the smallest (3 steps), runs on the engine: the
#: scripted judge covers all three end to end (tests/test_agent_formats_cli.py), CPU time is scarce.
NESTED = {"browsergym-workarena-all-menu-4": "2024-12-18_12-49-54_DemoAgentArgs_on_workarena.servicenow.all-menu_4"}
NOT_ON_ENGINE = {"browser-use-jakkaj-bfcl", "osworld-sec-eval-execute-binary"}
SAMPLES = sorted(p.name for p in TRAJ_ROOT.iterdir() if p.name not in NOT_ON_ENGINE) if TRAJ_ROOT.is_dir() else []


@pytest.fixture
async def spy(engine):
    judge = SpyJudge(OpenAICompatJudge(engine.judge_config()))
    yield judge
    await judge.aclose()


@pytest.mark.parametrize("name", SAMPLES or ["none"])
async def test_real_sample_trajectory(name, engine, spy):
    if not SAMPLES:
        missing(f"no real trajectories at {TRAJ_ROOT} (set CUA_SHARED_DATA)")
    traj = load_trajectory(TRAJ_ROOT / name / NESTED.get(name, ""))
    result = await verify(traj, judge=spy)
    assert_plumbing(result, spy, traj, model=engine.model)


async def test_long_synthetic_trajectory(engine, spy):
    traj = synthetic_trajectory(42)
    assert len(traj.distinct_screenshots()) == 42
    result = await verify(traj, VerifierConfig(relevance_batch_size=2), judge=spy)
    assert_plumbing(result, spy, traj, model=engine.model)
    # Batched relevance: 42 screenshots two per call.
    assert sum(c.stage == "relevance" for c in spy.calls) == 21


async def test_several_verifications_at_once_share_the_rubric(engine, spy):
    """A GRPO-like group: 3 rollouts of one task verified concurrently with one StageCache."""
    group = [synthetic_trajectory(5, task_id="group-task", seed=s) for s in (0, 1, 2)]
    cache = StageCache()
    spies = [SpyJudge(spy) for _ in group]  # per-rollout views over one shared HTTP client
    outcomes = await asyncio.gather(*[verify(t, judge=s, cache=cache) for t, s in zip(group, spies)])
    rubric_calls = [sum(c.stage == "rubric" for c in s.calls) for s in spies]
    assert sum(rubric_calls) == 1, rubric_calls  # generated once for the whole group
    assert all(s.images("relevance") for s in spies)  # every rollout's screenshots went out
    for traj, s, outcome, n_rubric in zip(group, spies, outcomes, rubric_calls):
        assert_plumbing(outcome, s, traj, model=engine.model, rubric_cached=n_rubric == 0)
