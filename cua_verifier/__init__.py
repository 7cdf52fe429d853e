"""The application package: the `cua-verifier` command line (`cua_verifier.cli`), and the TRL
rewards under the distribution's name (`cua_verifier.uv_process`, ...).

The command line sits here, above everything it drives (the core `verifier`, the rewards in
`reward`, the judge launcher and reward service in `serving`); see docs/architecture.md.

About the names: `reward` and `verifier` are also the names of unrelated PyPI packages, and
installed side by side with this project they share one site-packages folder, where one overwrites
the other. `cua_verifier.uv_process` does not avoid that clash: it is the same object as
`reward.uv_process`, and importing it imports this project's top-level `reward` and `verifier`
packages. Install the project in an environment without those two packages (README, "Package
names"). The reward names are loaded on first use, so the command line does not import `reward`.
"""
from __future__ import annotations

from typing import Any

_REWARDS = ("RewardSettings", "UVCombinedReward", "UVOutcomeReward", "UVProcessReward", "make_uv_rewards",
            "uv_combined", "uv_outcome", "uv_process")

__all__ = list(_REWARDS)


def __getattr__(name: str) -> Any:
    """`cua_verifier.uv_process` & co.: the `reward` package's objects, imported when first asked for."""
    if name in _REWARDS:
        import reward

        return getattr(reward, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
