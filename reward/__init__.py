"""TRL reward functions backed by the Universal Verifier.

Ready-made instances (configured from CUA_JUDGE_URL / CUA_JUDGE_MODEL / CUA_JUDGE_API_KEY /
CUA_VERIFIER_CONFIG at their first call), usable as ``trl grpo --reward_funcs reward.uv_process
reward.uv_outcome``::

    from reward import uv_process, uv_outcome
    trainer = GRPOTrainer(model, reward_funcs=[uv_process, uv_outcome], ...)

or configured in Python with `make_uv_rewards(judge_url=..., model=...)`. Both functions share one
verification per rollout. See reward/README.md for the trajectory contract.
"""
from __future__ import annotations

import sys
from typing import Any, NamedTuple

from verifier import session as _session
from verifier import settings as _settings
from verifier.loaders import rollouts as _rollouts
from verifier.session import VerifierSession, clear_sessions, get_session, rollout_key
from verifier.settings import RewardSettings

from .functions import UVCombinedReward, UVOutcomeReward, UVProcessReward

# The verification session, the settings model and the rollout adapters are core logic and moved
# into `verifier/` (verifier.session, verifier.settings, verifier.loaders.rollouts). Their old
# dotted names stay importable (`from reward.session import VerifierSession`, `reward.settings`,
# `reward.adapters`) as the very same module objects, not copies, so a patch or an isinstance
# check through either name sees one module.
for _old, _module in (("session", _session), ("settings", _settings), ("adapters", _rollouts)):
    sys.modules.setdefault(f"{__name__}.{_old}", _module)
    globals()[_old] = _module
del _old, _module


class UVRewards(NamedTuple):
    process: UVProcessReward
    outcome: UVOutcomeReward
    combined: UVCombinedReward


def make_uv_rewards(settings: RewardSettings | None = None, *, judge_url: str | list[str] | None = None,
                    model: str | None = None, **overrides: Any) -> UVRewards:
    """The three rewards on one shared settings object (so one shared session and cache).

    `judge_url`/`model` fill the judge section; other keyword arguments are `RewardSettings` fields
    (e.g. ``verifier={"votes": 3}``, ``max_concurrency=32``). With no arguments at all, the
    environment is read at first call, like the module-level instances.
    """
    if judge_url is not None or model is not None or overrides:
        probe = UVProcessReward(settings, judge_url=judge_url, model=model, **overrides)
        settings = probe.settings
    return UVRewards(UVProcessReward(settings), UVOutcomeReward(settings), UVCombinedReward(settings))


#: Module-level instances for `trl grpo --reward_funcs reward.uv_process reward.uv_outcome`.
uv_process = UVProcessReward()
uv_outcome = UVOutcomeReward()
uv_combined = UVCombinedReward()

__all__ = ["RewardSettings", "UVCombinedReward", "UVOutcomeReward", "UVProcessReward", "UVRewards",
           "VerifierSession", "clear_sessions", "get_session", "make_uv_rewards", "rollout_key",
           "uv_combined", "uv_outcome", "uv_process"]
