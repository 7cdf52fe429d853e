"""The verifier rewards score recorded browser episodes the way TRL hands them over
(`environments=[...]`): scripted judge in process, and the schema-echo judge over HTTP.
Playwright's sync API keeps its own loop on this thread, so the rewards run on another thread's
loop, as TRL runs them (its reward loop lives on a daemon thread)."""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from reward import RewardSettings, clear_sessions, make_uv_rewards
from reward.echo_judge import EchoJudgeServer
from verifier.testing import ScriptedJudge

pytestmark = pytest.mark.browser

JUDGES: list[ScriptedJudge] = []


def recording_judge() -> ScriptedJudge:
    JUDGES.append(ScriptedJudge())
    return JUDGES[-1]


def run(coro):
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def both(uv, prompts, **kwargs):
    empty = [[] for _ in prompts]
    return await uv.process(prompts, empty, **kwargs), await uv.outcome(prompts, empty, **kwargs)


class Recorder:
    def __init__(self) -> None:
        self.metrics: dict = {}
        self.extra: dict = {}

    def log_metric(self, name, value):
        self.metrics[name] = value

    def log_extra(self, name, values):
        self.extra[name] = values


def episode(env, task_id: str, kill: bool = False):
    env.reset(task_id=task_id)
    env.scroll("down")
    if kill:
        env.browser_process.kill()
        env.click(element=1)
    else:
        env.answer("Wireless Travel Mouse, $12.49")


def test_rewards_score_recorded_episodes_and_none_for_an_episode_error(make_env):
    clear_sessions()
    JUDGES.clear()
    uv = make_uv_rewards(RewardSettings(judge_factory=recording_judge, cache_factory=None))
    with make_env() as good, make_env() as crashed:
        episode(good, "shop-cheapest-wireless-mouse")
        episode(crashed, "shop-cheapest-wireless-mouse", kill=True)
        rec = Recorder()
        prompts = [[{"role": "user", "content": good.task.instruction}]] * 2
        kwargs = {"environments": [good, crashed], "task_id": [good.task.id] * 2,
                  "log_metric": rec.log_metric, "log_extra": rec.log_extra}
        process, outcome = run(both(uv, prompts, **kwargs))
    clear_sessions()
    assert isinstance(process[0], float) and 0.0 <= process[0] <= 1.0 and outcome[0] == 1.0
    assert process[1] is None and outcome[1] is None  # the machine failed, not the policy
    assert "episode error" in rec.extra["uv_outcome/unscored_reason"][1]
    assert rec.metrics["uv_outcome/failure_rate"] == 0.5
    (judge,) = JUDGES
    outcome_calls = judge.requests_for("outcome")
    assert outcome_calls, "the judge never saw the episode"
    shots = ScriptedJudge.images(outcome_calls[0])
    assert len(shots) >= 2  # the browser's screenshots reached the judge
    assert "Wireless Travel Mouse, $12.49" in judge.text(outcome_calls[0])


def test_rewards_over_http_with_the_echo_judge(env):
    clear_sessions()
    episode(env, "library-riverside-saturday")
    with EchoJudgeServer() as echo:
        uv = make_uv_rewards(judge_url=echo.url, model="echo")
        prompts = [[{"role": "user", "content": env.task.instruction}]]
        process, outcome = run(both(uv, prompts, environments=[env]))
        assert echo.requests > 0
    clear_sessions()
    assert isinstance(process[0], float) and outcome[0] in (0.0, 1.0)


def test_verified_env_owns_its_reward_for_async_grpo(make_env):
    """AsyncGRPO passes rewards no environments; an env-owned async `get_reward` is what it awaits."""
    import functools
    import pickle

    from browser_env import EnvConfig, VerifiedBrowserEnv

    clear_sessions()
    uv = make_uv_rewards(RewardSettings(judge_factory="verifier.testing.ScriptedJudge", cache_factory=None,
                                        combined_process_weight=0.5))
    factory = functools.partial(VerifiedBrowserEnv, EnvConfig(viewport_width=480, viewport_height=320),
                                reward=uv.combined)
    assert pickle.loads(pickle.dumps(factory)).keywords["reward"].__name__ == "uv_combined"
    env = factory()
    try:
        episode(env, "shop-cheapest-wireless-mouse")
        value = run(env.get_reward())
        assert isinstance(value, float) and 0.5 <= value <= 1.0  # scripted success: outcome 1
        episode(env, "shop-cheapest-wireless-mouse", kill=True)
        assert run(env.get_reward()) is None
    finally:
        env._shutdown()
    clear_sessions()
