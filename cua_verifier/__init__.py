"""The verifier rewards under the distribution's own name, which no other PyPI package uses.

`reward` and `verifier` are also the names of unrelated PyPI packages; installed side by side with
this project they land in the same site-packages folder and one overwrites the other. Import paths
under `cua_verifier` cannot collide::

    trl grpo ... --reward_funcs cua_verifier.uv_process cua_verifier.uv_outcome

(`trl grpo` imports the module part of a dotted `--reward_funcs` with the working directory first
on `sys.path`, so from a checkout `reward.uv_process` resolves to this project's folder too.)
"""
from __future__ import annotations

from reward import (
                    RewardSettings,
                    UVCombinedReward,
                    UVOutcomeReward,
                    UVProcessReward,
                    make_uv_rewards,
                    uv_combined,
                    uv_outcome,
                    uv_process,
)

__all__ = ["RewardSettings", "UVCombinedReward", "UVOutcomeReward", "UVProcessReward", "make_uv_rewards",
           "uv_combined", "uv_outcome", "uv_process"]
