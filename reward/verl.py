"""`compute_score` for verl's custom reward function, backed by the reward service.

verl (0.9) loads `reward.custom_reward_function.{path,name}` and merges
`reward.custom_reward_function.reward_kwargs` into the call as keyword arguments, then calls
`compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)` per sample: it
awaits an `async def` (its reward loop) and runs a plain function in a thread. A dict result's
`"score"` is the reward and every other key is logged per sample, so every call returns the same
keys: `score`, `uv_process`, `uv_outcome`, `uv_unscored`, `uv_grounded`. Configure it with::

    reward.custom_reward_function.path=recipes/verl_compute_score.py
    reward.custom_reward_function.name=compute_score_async
    +reward.custom_reward_function.reward_kwargs.reward=outcome

Per-run options (keyword arguments, above the environment variables, above the defaults):
`reward` (`combined`, `process`, `outcome`; `$CUA_VERL_REWARD`), `on_failure` (`error`, the
default, raises so the failure is visible; or a number, flagged by `uv_unscored = 1`;
`$CUA_VERL_ON_FAILURE`), `require_screenshots` (refuse rows without screenshots) and `url`.

`ground_truth` names the task (JSON object, plain instruction, or a numpy value holding either);
`solution_str` is the agent's answer. `extra_info["trajectory"]` carries a recorded rollout, and then
the screenshots are judged; without it the row is verified on the answer alone (action-only mode,
`uv_grounded = 0`). The browser agent loop (`browser_env.verl_agent`) calls `compute_score_async`
itself with its episode's trajectory and returns the reward from the loop, so its screenshots
never travel through verl's batch to a reward worker.
"""
from __future__ import annotations

import asyncio
import json
import os
import threading
import weakref
from typing import Any

from .client import ClientSettings, apost, async_client
from .openrlhf import post_openrlhf

_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[ClientSettings, Any]] = \
    weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def plain(value: Any) -> Any:
    """numpy scalars/arrays (verl keeps non-tensor columns as numpy object arrays) as Python values."""
    if hasattr(value, "tolist") and callable(value.tolist):
        return value.tolist()  # ndarray and numpy scalar alike
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _request(solution_str: str, ground_truth: Any, extra_info: dict | None,
             options: dict[str, Any]) -> tuple[dict, dict[str, str]]:
    label: Any = plain(ground_truth)
    if extra_info and extra_info.get("trajectory") is not None:
        label = {"trajectory": plain(extra_info["trajectory"])}
    if isinstance(label, list) and len(label) == 1:
        label = label[0]  # a one-element array around the task
    if extra_info and extra_info.get("rubric") is not None:  # the row's rubric (docs/rubrics.md)
        label = {**(label if isinstance(label, dict) else {"instruction": label}), "rubric": plain(extra_info["rubric"])}
    body = {"query": [solution_str], "prompts": [""],
            "labels": [label if isinstance(label, str) else json.dumps(label)]}
    reward = options.get("reward") or os.environ.get("CUA_VERL_REWARD", "combined")
    on_failure = options.get("on_failure")
    on_failure = os.environ.get("CUA_VERL_ON_FAILURE", "error") if on_failure is None else on_failure
    params = {"reward": str(reward), "on_failure": str(on_failure)}
    if options.get("require_screenshots"):
        params["require_screenshots"] = "true"
    return body, params


def _score(out: dict) -> dict[str, float]:
    logs = out["extra_logs"]
    return {"score": out["rewards"][0], **{k: v[0] for k, v in logs.items()}}


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None,
                  *, reward: str | None = None, on_failure: str | float | None = None,
                  require_screenshots: bool = False, url: str | None = None, **_: Any) -> dict[str, float]:
    """`{"score", "uv_process", "uv_outcome", "uv_unscored", "uv_grounded"}` for one rollout (blocking)."""
    body, params = _request(solution_str, ground_truth, extra_info, {
        "reward": reward, "on_failure": on_failure, "require_screenshots": require_screenshots})
    return _score(post_openrlhf(body, url=url, params=params))


async def compute_score_async(data_source: str, solution_str: str, ground_truth: Any,
                              extra_info: dict | None = None, *, reward: str | None = None,
                              on_failure: str | float | None = None, require_screenshots: bool = False,
                              url: str | None = None, **_: Any) -> dict[str, float]:
    """The same on the event loop verl's reward loop awaits it on (one pooled async client per loop)."""
    body, params = _request(solution_str, ground_truth, extra_info, {
        "reward": reward, "on_failure": on_failure, "require_screenshots": require_screenshots})
    settings, client = _client(url)
    return _score(await apost(settings, client, "/v1/openrlhf", body, params=params))


def _client(url: str | None) -> tuple[ClientSettings, Any]:
    settings = ClientSettings(**({"url": url} if url else {}))
    loop = asyncio.get_running_loop()
    with _LOCK:
        hit = _CLIENTS.get(loop)
        if hit is None or hit[0] != settings:
            hit = _CLIENTS[loop] = (settings, async_client(settings))
        return hit
