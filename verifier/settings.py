"""Settings read from the environment (``CUA_*``): the one place that parses them.

Why: the judge URL used to be split from its comma list in seven places (CLI commands, judge
config, reward settings, reward functions, recipes), each a little differently (one kept blank
entries, one did not strip). `EnvSettings` reads the variables once with pydantic-settings and
`split_urls` is the only parser of a URL list, used for flags (``--judge-url a,b``) as well.

Precedence, everywhere: explicit flags / keyword arguments > a ``--config`` file > the
environment (``CUA_JUDGE_URL``, ``CUA_JUDGE_MODEL``) > the file named by ``CUA_VERIFIER_CONFIG``
> defaults. The CLI (`verifier/cli/_options.py`) and the rewards (`reward.settings.RewardSettings
.from_env`) apply it; `JudgeConfig.from_env` reads the environment through this model too.

    env = EnvSettings()                 # CUA_JUDGE_URL="http://a:8000/v1, http://b:8000/v1"
    env.judge_url                       # ['http://a:8000/v1', 'http://b:8000/v1']
    env.judge_fields()                  # {'base_urls': [...], 'model': ...} (only what is set)

The API key is never a setting: configs name the variable that holds it (``api_key_env``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

ENV_PREFIX = "CUA_"


def split_urls(value: str | Sequence[str] | None) -> list[str]:
    """A comma-separated list (or a list) of URLs, stripped, blanks dropped."""
    if value is None:
        return []
    parts = value.split(",") if isinstance(value, str) else list(value)
    return [str(p).strip() for p in parts if str(p).strip()]


class EnvSettings(BaseSettings):
    """The ``CUA_*`` environment variables the verifier reads (unknown ``CUA_*`` ones are ignored)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    judge_url: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """``CUA_JUDGE_URL``: judge base URL(s), comma-separated replicas."""
    judge_model: str | None = None
    """``CUA_JUDGE_MODEL``: the served model name."""
    verifier_config: str | None = None
    """``CUA_VERIFIER_CONFIG``: path of a JSON settings file (reward-settings or verifier fields)."""

    @field_validator("judge_url", mode="before")
    @classmethod
    def _split(cls, value: Any) -> list[str]:
        return split_urls(value)

    @field_validator("judge_model", "verifier_config", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    def judge_fields(self) -> dict[str, Any]:
        """`JudgeConfig` fields this environment sets (nothing for unset variables)."""
        out: dict[str, Any] = {}
        if self.judge_url:
            out["base_urls"] = list(self.judge_url)
        if self.judge_model:
            out["model"] = self.judge_model
        return out


def env_settings() -> EnvSettings:
    """The environment as it is now (read at each call: tests and long runs may change it)."""
    return EnvSettings()
