"""The OpenRLHF browser agent's settings, read where the agent runs: inside a vLLM engine actor.

OpenRLHF builds the agent in each engine actor, a Ray worker process. A worker has the driver's
environment only on the driver's own node with a cluster the driver started; on a cluster started
elsewhere (`ray start`, `ray job submit`) it has what the job's `runtime_env` passes and nothing
else. So the settings come from explicit values first (a configured agent file:
`browser_env.openrlhf_agent.configured`), then the actor's environment, then the defaults, and are
validated when the executor is built, so a typo fails at load rather than as a silent default.
"""
from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from .config import DEFAULT_POLICY_MAX_SIDE


class AgentSettings(BaseSettings):
    """Explicit values, then `$CUA_REWARD_URL`, `$CUA_POLICY_MAX_SIDE`, `$CUA_OPENRLHF_REWARD`,
    `$CUA_OPENRLHF_ON_FAILURE`, `$CUA_MAX_ENV_STEPS`, then the defaults."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    reward_url: str | None = Field(default=None, validation_alias=AliasChoices("reward_url", "CUA_REWARD_URL"),
                                   description="the reward service (None: the client's default, 127.0.0.1:8012)")
    policy_max_side: int = Field(default=DEFAULT_POLICY_MAX_SIDE, ge=64,
                                 validation_alias=AliasChoices("policy_max_side", "CUA_POLICY_MAX_SIDE"),
                                 description="thumbnail side for the policy; the judge gets full size")
    reward: Literal["combined", "process", "outcome"] = Field(
        default="combined", validation_alias=AliasChoices("reward", "CUA_OPENRLHF_REWARD"))
    on_failure: Literal["mean"] | float = Field(
        default="mean", validation_alias=AliasChoices("on_failure", "CUA_OPENRLHF_ON_FAILURE"),
        description=("reward of an episode the verifier cannot score (flagged uv_unscored): 'mean', the recent "
                     "mean of this process's scored episodes of the task (reward.unscored_fill), or a number"))
    max_env_steps: int = Field(default=15, ge=1, validation_alias=AliasChoices("max_env_steps", "CUA_MAX_ENV_STEPS"))
