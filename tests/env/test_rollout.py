"""A scripted agent through `make_rollout_func`: the episodes reach the verifier rewards as the
`trajectory` rollout field (verifier.loaders.rollouts path (b)), screenshots included."""
from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from browser_env import BrowserEnv, EnvConfig, get_task
from browser_env.rollout import make_rollout_func
from reward import RewardSettings, clear_sessions, make_uv_rewards

pytestmark = pytest.mark.browser


class ScriptedAgent:
    """Opens Jazz Night, sees it is sold out, says so."""

    def __call__(self, messages):
        done = sum(m["role"] == "assistant" for m in messages)
        if done == 0:
            return {"name": "click", "arguments": {"element": 2}, "text": "Open Jazz Night"}
        return {"name": "answer", "arguments": {"text": "Jazz Night is sold out; nothing was bought."}}


def test_rollout_func_plays_episodes_and_the_rewards_read_them(browser_ok, tmp_path):
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    from reward.testing import build_tiny_policy

    trainer = SimpleNamespace(processing_class=AutoTokenizer.from_pretrained(build_tiny_policy(tmp_path)),
                              num_generations=2)
    factory = functools.partial(BrowserEnv, EnvConfig(viewport_width=480, viewport_height=320))
    rollout = make_rollout_func(ScriptedAgent(), factory)
    task = get_task("tickets-jazz-sold-out")
    try:
        out = rollout([[{"role": "user", "content": task.instruction}]], trainer)
        assert len(out["completion_ids"]) == len(out["trajectory"]) == 2
        traj = out["trajectory"][0]
        assert [s["action"] for s in traj["steps"]] == ["click", "answer"]
        assert len(traj["screenshots"]) == 5 and traj["final_answer"].startswith("Jazz Night is sold out")
        assert rollout.environments[0].site_state["orders"] == []
        clear_sessions()
        uv = make_uv_rewards(RewardSettings(judge_factory="verifier.testing.ScriptedJudge", cache_factory=None))
        prompts = [[{"role": "user", "content": task.instruction}]] * 2
        with ThreadPoolExecutor(1) as pool:  # Playwright's sync loop owns this thread
            values = pool.submit(asyncio.run, uv.outcome(prompts, ["", ""], trajectory=out["trajectory"])).result()
        assert values == [1.0, 1.0]
        with pytest.raises(ValueError, match="no browser_env task"):
            rollout([[{"role": "user", "content": "something else"}]], trainer)
    finally:
        for env in rollout.environments:
            env._shutdown()
        clear_sessions()
