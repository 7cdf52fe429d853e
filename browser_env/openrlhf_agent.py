"""OpenRLHF agent (`--train.agent_func_path browser_env/openrlhf_agent.py`): browser_env episodes.

OpenRLHF loads this file by path inside each vLLM engine actor and builds `AgentExecutor()`, a
`MultiTurnAgentExecutor` over `AgentInstance` (one instance per prompt). Per episode:

- `reset`: the row's label names the task (`{"id": "<browser_env task id>", ...}` from
  `--data.label_key task`, or the task id); Chromium opens the start page, and the first prompt is
  the instruction (`--data.input_key prompt`) with the page text and the tools, rendered by the
  policy's own chat template (`browser_env.chat_turns`; a prompt the dataset already rendered gets
  the page text inserted before the user turn's end);
- `step`: the policy's turn is a Hermes tool call (`<tool_call>{"name", "arguments"}</tool_call>`)
  run as a browser action, or plain text, taken as the final answer. The screenshot comes back as
  `environment_images` (a thumbnail, `policy_max_side`, default 448 px) for a VLM policy, whose
  tool turn carries one image placeholder per image in its own markup; the page text is the tool
  turn's text (`environment_feedback`);
- when the episode ends (answer, step budget), the recorded trajectory, full-size screenshots
  included, goes to the reward service and its reward is the step's `rewards`, with `uv_process`,
  `uv_outcome`, `uv_unscored` and `uv_grounded` in `extra_logs`.

Settings (`AgentSettings`) are read when the executor is built, i.e. inside the engine actor:
from the environment (`$CUA_REWARD_URL`, `$CUA_POLICY_MAX_SIDE`, `$CUA_OPENRLHF_REWARD`,
`$CUA_OPENRLHF_ON_FAILURE`, `$CUA_MAX_ENV_STEPS`), which a Ray actor has only when they were passed
to it (`ray job submit --runtime-env-json '{"env_vars": {...}}'`; a worker on another node never
sees the driver's shell), or fixed in a configured agent file, which needs no environment at all::

    # runs/openrlhf_agent.py, passed as --train.agent_func_path
    from browser_env.openrlhf_agent import configured
    AgentExecutor = configured(reward_url="http://reward-host:8012", policy_max_side=448)

OpenRLHF swallows exceptions and cannot take a missing reward, so an episode the verifier cannot
score (browser died, service down past the client's retries) gets `on_failure`: `mean` by default,
the recent mean reward of this process's scored episodes of the same task (of all tasks when none),
so its group-relative advantage is about zero, or a number such as `0`; flagged by `uv_unscored = 1`.
Tested on OpenRLHF 0.11 (`browser_env.frameworks.TESTED`, checked at import).
"""
from __future__ import annotations

import json
import logging
from typing import Any, ClassVar

from browser_env.frameworks import require_tested

require_tested("openrlhf")

import torch
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from browser_env.agent_settings import AgentSettings
from browser_env.chat_turns import ChatTurns
from browser_env.episode_runner import TOOL_SCHEMAS, ThreadedEpisode, parse_tool_call, task_id_of
from reward.openrlhf import apost_openrlhf, clean_answer, trajectory_body
from reward.unscored_fill import RunningMeans

log = logging.getLogger(__name__)
LOGS = ("uv_process", "uv_outcome", "uv_unscored", "uv_grounded")
_SCORED = RunningMeans()  # this process's recent scored rewards, per task: the fill of an unscored episode


class AgentInstance(AgentInstanceBase):
    """One browser episode (see module doc); `executor` carries the settings and the turn markup."""

    def __init__(self, executor: AgentExecutor) -> None:
        self.executor = executor
        self.settings = executor.settings
        self.episode = ThreadedEpisode(policy_max_side=self.settings.policy_max_side)
        self.steps = 0

    @property
    def turns(self) -> ChatTurns:
        assert self.executor.turns is not None, "AgentExecutor.execute sets the policy's turns"
        return self.executor.turns

    async def reset(self, states: dict, **kwargs: Any) -> dict:
        prompt, label = states["observation"], states.get("label")
        label = json.dumps(label) if isinstance(label, dict) else label  # a JSONL row's object label
        _images, text = await self.episode.reset(task_id_of({"label": label, "prompt": prompt}))
        return {"observation": self.turns.first_prompt(prompt, f"\n\nThe browser shows:\n{text}")}

    async def step(self, states: dict, **kwargs: Any) -> dict:
        action = states["action_text"]
        call = parse_tool_call(action)
        self.steps += 1
        if call is None:  # plain text: the agent's final answer
            name, (images, text) = "answer", await self.episode.act("answer", {"text": clean_answer(action)})
        else:
            name, (images, text) = call[0], await self.episode.act(*call)
        images = images if self.turns.sees_images else []  # a text policy: the judge gets them from the recording
        done = self.episode.done or self.steps >= self.settings.max_env_steps
        reward, logs = (await self._reward()) if done else (0.0, {})
        out = {"rewards": torch.tensor(reward), "scores": torch.tensor(reward),
               "environment_feedback": self.turns.tool_turn(name, text, len(images)),
               "environment_images": images or None, "done": done, "sampling_params": states.get("sampling_params"),
               "extra_logs": {k: torch.tensor(v) for k, v in logs.items()}}
        if done:
            await self.episode.close()
        return out

    async def _reward(self) -> tuple[float, dict[str, float]]:
        """The verifier's reward for the recorded episode; the flagged fill value if it has none."""
        trajectory = await self.episode.trajectory()
        task = str(trajectory["task"]["id"]) if trajectory else ""
        policy = self.settings.on_failure
        if trajectory is not None:
            # the service retries its judge's outages (503) within the client's deadline; what it
            # still cannot score comes back as an error, filled here, where the other episodes are seen
            params = {"reward": self.settings.reward,
                      "on_failure": str(policy) if isinstance(policy, float) else "error"}
            try:
                out = await apost_openrlhf(trajectory_body(trajectory), url=self.settings.reward_url, params=params)
            except Exception as exc:  # noqa: BLE001 - OpenRLHF would swallow it: log it loudly, flag the row
                log.warning("reward service failed for task %s: %s", task, exc)
            else:
                reward, logs = float(out["rewards"][0]), {k: float(out["extra_logs"][k][0]) for k in LOGS}
                if not logs["uv_unscored"]:
                    _SCORED.add(task, reward)
                return reward, logs
        fill = _fill(policy, task)
        return fill, {"uv_process": fill, "uv_outcome": fill, "uv_unscored": 1.0, "uv_grounded": 0.0}


def _fill(policy: float | str, task: str) -> float:
    """An unscored episode's reward: the number asked for, or the recent mean of this process's
    scored episodes of the task, else of all tasks (reward.unscored_fill), else 0.0: before any
    episode scored there is no mean, and a group whose every episode is unscored has equal rewards
    (zero advantage) whatever they are."""
    if isinstance(policy, float):
        return policy
    mean = _SCORED.mean(task)
    return 0.0 if mean is None else mean


class AgentExecutor(MultiTurnAgentExecutor):
    """What OpenRLHF builds from `--train.agent_func_path` (no arguments: settings from the
    environment; `configured(...)` makes one with fixed settings)."""

    settings_override: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        self.settings = AgentSettings(**self.settings_override)
        self.turns: ChatTurns | None = None
        executor = self

        class BoundInstance(AgentInstance):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(executor)

        super().__init__(BoundInstance)

    async def execute(self, prompt: Any, label: Any, sampling_params: Any, max_length: int, hf_tokenizer: Any,
                      llm_engine: Any, images: Any = None) -> Any:
        """OpenRLHF's own multi-turn loop, once the policy's markup is known: `hf_tokenizer` is the
        policy's tokenizer, or its processor for a VLM (one per engine, so one `ChatTurns`)."""
        if self.turns is None or self.turns.renderer is not hf_tokenizer:
            self.turns = ChatTurns(hf_tokenizer, TOOL_SCHEMAS)
        return await super().execute(prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine, images)


def configured(**settings: Any) -> type[AgentExecutor]:
    """An `AgentExecutor` class with fixed settings (`AgentSettings` fields), for an agent file that
    needs nothing from the engine actor's environment (see module doc). Validated here, at load."""
    AgentSettings(**settings)
    return type("AgentExecutor", (AgentExecutor,), {"settings_override": dict(settings)})
