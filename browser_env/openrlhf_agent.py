"""OpenRLHF agent (`--train.agent_func_path browser_env/openrlhf_agent.py`): browser_env episodes.

OpenRLHF loads this file by path and builds `AgentExecutor()`, a `MultiTurnAgentExecutor` over
`AgentInstance` (one instance per prompt). Per episode:

- `reset`: the row's label names the task (`{"id": "<browser_env task id>", ...}` from
  `--data.label_key`, or the task id); Chromium opens the start page and its text joins the
  prompt's last user turn (ChatML prompts; otherwise it is appended);
- `step`: the policy's turn is a Hermes tool call (`<tool_call>{"name", "arguments"}</tool_call>`)
  run as a browser action, or plain text, taken as the final answer. The screenshot comes back as
  `environment_images` (a thumbnail, `$CUA_POLICY_MAX_SIDE`, default 448 px; a VLM tokenizer gets
  one image placeholder per image) and the page text as `environment_feedback`;
- when the episode ends (answer, step budget), the recorded trajectory, full-size screenshots
  included, goes to the reward service (`$CUA_REWARD_URL`) and its reward is the step's `rewards`,
  with `uv_process`, `uv_outcome`, `uv_unscored` and `uv_grounded` in `extra_logs`.

OpenRLHF swallows exceptions and cannot take a missing reward, so an episode the verifier cannot
score (browser died, service down past the client's retries) gets `$CUA_OPENRLHF_ON_FAILURE`:
`mean` by default, the recent mean reward of this process's scored episodes of the same task (of
all tasks when none), so its group-relative advantage is about zero, or a number such as `0`;
flagged by `uv_unscored = 1`. `$CUA_OPENRLHF_REWARD` picks `combined` (default), `process` or `outcome`.
"""
from __future__ import annotations

import logging
import os
from typing import Any

import torch
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from browser_env.episode_runner import ThreadedEpisode, parse_tool_call, policy_max_side, task_id_of
from reward.openrlhf import DEFAULT_ON_FAILURE, apost_openrlhf, clean_answer, trajectory_body
from reward.unscored_fill import RunningMeans, fill_policy

log = logging.getLogger(__name__)
IMAGE = "<|vision_start|><|image_pad|><|vision_end|>"
ASSISTANT = "<|im_start|>assistant\n"
LOGS = ("uv_process", "uv_outcome", "uv_unscored", "uv_grounded")
_SCORED = RunningMeans()  # this process's recent scored rewards, per task: the fill of an unscored episode


class AgentInstance(AgentInstanceBase):
    """One browser episode (see module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.episode = ThreadedEpisode(policy_max_side=policy_max_side())
        self.max_steps = int(os.environ.get("CUA_MAX_ENV_STEPS", "15"))
        self.steps = 0

    async def reset(self, states: dict, **kwargs: Any) -> dict:
        prompt = states["observation"]
        _images, text = await self.episode.reset(task_id_of({"label": states.get("label"), "prompt": prompt}))
        page = f"\n\nThe browser shows:\n{text}"
        if prompt.endswith(ASSISTANT) and prompt[: -len(ASSISTANT)].rstrip().endswith("<|im_end|>"):
            head = prompt[: -len(ASSISTANT)].rstrip()[: -len("<|im_end|>")]
            return {"observation": f"{head}{page}<|im_end|>\n{ASSISTANT}"}
        return {"observation": prompt + page}

    async def step(self, states: dict, **kwargs: Any) -> dict:
        action = states["action_text"]
        call = parse_tool_call(action)
        self.steps += 1
        if call is None:  # plain text: the agent's final answer
            images, text = await self.episode.act("answer", {"text": clean_answer(action)})
        else:
            images, text = await self.episode.act(*call)
        done = self.episode.done or self.steps >= self.max_steps
        reward, logs = (await self._reward()) if done else (0.0, {})
        feedback = (f"\n<|im_start|>user\n<tool_response>\n{IMAGE * len(images)}{text}\n</tool_response>"
                    f"<|im_end|>\n{ASSISTANT}")
        out = {"rewards": torch.tensor(reward), "scores": torch.tensor(reward), "environment_feedback": feedback,
               "environment_images": images or None, "done": done, "sampling_params": states.get("sampling_params"),
               "extra_logs": {k: torch.tensor(v) for k, v in logs.items()}}
        if done:
            await self.episode.close()
        return out

    async def _reward(self) -> tuple[float, dict[str, float]]:
        """The verifier's reward for the recorded episode; the flagged fill value if it has none."""
        policy = fill_policy(os.environ.get("CUA_OPENRLHF_ON_FAILURE", DEFAULT_ON_FAILURE))
        trajectory = await self.episode.trajectory()
        task = str(trajectory["task"]["id"]) if trajectory else ""
        if trajectory is not None:
            # the service retries its judge's outages (503) within the client's deadline; what it
            # still cannot score comes back as an error, filled here, where the other episodes are seen
            params = {"reward": os.environ.get("CUA_OPENRLHF_REWARD", "combined"),
                      "on_failure": str(policy) if isinstance(policy, float) else "error"}
            try:
                out = await apost_openrlhf(trajectory_body(trajectory), params=params)
            except Exception as exc:  # noqa: BLE001 - OpenRLHF would swallow it: log it loudly, flag the row
                log.warning("reward service failed for task %s: %s", task, exc)
            else:
                reward, logs = float(out["rewards"][0]), {k: float(out["extra_logs"][k][0]) for k in LOGS}
                if not logs["uv_unscored"]:
                    _SCORED.add(task, reward)
                return reward, logs
        fill = _fill(policy, task)
        return fill, {"uv_process": fill, "uv_outcome": fill, "uv_unscored": 1.0, "uv_grounded": 0.0}


def _fill(policy: float | str | None, task: str) -> float:
    """An unscored episode's reward: the number asked for, or the recent mean of this process's
    scored episodes of the task, else of all tasks (reward.unscored_fill), else 0.0: before any
    episode scored there is no mean, and a group whose every episode is unscored has equal rewards
    (zero advantage) whatever they are."""
    if isinstance(policy, float):
        return policy
    mean = _SCORED.mean(task)
    return 0.0 if mean is None else mean


class AgentExecutor(MultiTurnAgentExecutor):
    """What OpenRLHF builds from `--train.agent_func_path`."""

    def __init__(self) -> None:
        super().__init__(AgentInstance)
