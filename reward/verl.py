"""`compute_score` for verl's custom reward function, backed by the reward service.

verl calls `compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)`
(sync in its reward managers; the reward loop also awaits an `async def`) and takes a float or a
dict whose `"score"` is the reward and whose other keys are logged as per-sample extra info (so
every call returns the same keys). Configure it in verl with::

    custom_reward_function.path=recipes/verl_compute_score.py custom_reward_function.name=compute_score

`ground_truth` names the task (JSON object or plain instruction) and `solution_str` is the
agent's final answer; `extra_info["trajectory"]` may carry a rollout recorded by the harness.
The service is `$CUA_REWARD_URL` (key in `$CUA_REWARD_API_KEY`); `$CUA_VERL_REWARD` picks the
score (`combined`, `process`, `outcome`) and `$CUA_VERL_ON_FAILURE` what an unscored rollout gets:
`error` (default: raise, so the failure is visible) or a number, flagged by `uv_unscored = 1`.
"""
from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from .openrlhf import post_openrlhf


def _request(solution_str: str, ground_truth: Any, extra_info: dict | None) -> tuple[dict, dict]:
    label: Any = ground_truth
    if extra_info and extra_info.get("trajectory") is not None:
        label = {"trajectory": extra_info["trajectory"]}
    body = {"query": [solution_str], "prompts": [""],
            "labels": [label if isinstance(label, str) else json.dumps(label)]}
    params = {"reward": os.environ.get("CUA_VERL_REWARD", "combined"),
              "on_failure": os.environ.get("CUA_VERL_ON_FAILURE", "error")}
    return body, params


def _score(out: dict) -> dict[str, float]:
    logs = out["extra_logs"]
    return {"score": out["rewards"][0], **{k: v[0] for k, v in logs.items()}}


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
                  **kwargs: Any) -> dict[str, float]:
    """`{"score", "uv_process", "uv_outcome", "uv_unscored"}` for one rollout."""
    body, params = _request(solution_str, ground_truth, extra_info)
    return _score(post_openrlhf(body, params=params))


async def compute_score_async(data_source: str, solution_str: str, ground_truth: Any,
                              extra_info: dict | None = None, **kwargs: Any) -> dict[str, float]:
    """The same, for verl's async reward loop (the blocking call runs in a thread)."""
    return await asyncio.to_thread(compute_score, data_source, solution_str, ground_truth, extra_info)
