"""`VerifiedBrowserEnv`: a browser environment that scores its own episode with the verifier.

Why: TRL's `AsyncGRPOTrainer` (experimental) calls reward functions with dataset columns only (no
`environments`, no `log_metric` / `log_extra`) and sums them unweighted, so `uv_process` /
`uv_outcome` cannot reach the episode there. What it does support is an environment-owned reward:
an (async) `get_reward()` awaited per finished rollout. This class returns the combined verifier
reward (`w * process + (1 - w) * outcome`, `w = combined_process_weight`, so the weighting lives
in the reward, not in the trainer), or `None` when the episode could not be scored.
With the synchronous `GRPOTrainer` it also works: TRL adds it as one more reward column named
after the class (weight 1), so pass no verifier `reward_funcs` then.
"""
from __future__ import annotations

from typing import Any

from .env import BrowserEnv


class VerifiedBrowserEnv(BrowserEnv):
    def __init__(self, config: Any = None, *, reward: Any = None, server: Any = None) -> None:
        super().__init__(config, server=server)
        self._reward = reward  # a reward.UVCombinedReward (picklable); default: reward.uv_combined

    async def get_reward(self) -> float | None:
        """The verifier's combined reward for the episode just played (`None`: unscorable)."""
        if self._reward is None:
            from reward import uv_combined as reward_fn
        else:
            reward_fn = self._reward
        task = self.task
        if task is None:
            return None
        (value,) = await reward_fn([[{"role": "user", "content": task.instruction}]], [[]],
                                   environments=[self], task_id=[task.id])
        return value
