"""The settings of a verification run: the environment (``CUA_*``) and the one settings model.

Two parts, one module (models layer: everything above reads it, it reads nothing above):
- `EnvSettings`: the ``CUA_*`` variables, read in one place;
- `RewardSettings`: everything a `VerifierSession` needs (judge, verifier config, concurrency,
  caching, time budgets), used by the rewards, the command line, Ray actors and the reward service.
  (It lived in `reward/settings.py`; `reward.settings` still names this module.)

Why: the judge URL used to be split from its comma list in seven places (CLI commands, judge
config, reward settings, reward functions, recipes), each a little differently (one kept blank
entries, one did not strip). `EnvSettings` reads the variables once with pydantic-settings and
`split_urls` is the only parser of a URL list, used for flags (``--judge-url a,b``) as well.

Precedence, everywhere: explicit flags / keyword arguments > a ``--config`` file > the
environment (``CUA_JUDGE_URL``, ``CUA_JUDGE_MODEL``) > the file named by ``CUA_VERIFIER_CONFIG``
> defaults. The CLI (`verifier/options.py`) and the rewards (`RewardSettings.from_env`, below) apply it; `JudgeConfig.from_env` reads the environment through this model too.

    env = EnvSettings()                 # CUA_JUDGE_URL="http://a:8000/v1, http://b:8000/v1"
    env.judge_url                       # ['http://a:8000/v1', 'http://b:8000/v1']
    env.judge_fields()                  # {'base_urls': [...], 'model': ...} (only what is set)

The API key is never a setting: configs name the variable that holds it (``api_key_env``).
"""
from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from .errors import ConfigError

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
    """``CUA_VERIFIER_CONFIG``: path of a JSON or YAML settings file (reward-settings or verifier fields)."""
    decode_budget_mb: int = Field(default=256, ge=16)
    """``CUA_DECODE_BUDGET_MB``: decoded screenshot pixels held at once by this process's image
    encoders, in MB (`verifier.judge.pixels`); a decode that would pass it waits for room."""
    decode_threads: int = Field(default=2, ge=1, le=64)
    """``CUA_DECODE_THREADS``: threads that decode screenshots to downscale them; each keeps the
    malloc arena of its largest decode, so memory grows with this, throughput too."""

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


# ---- the settings model of a verification session (was reward/settings.py) ----------------------
# Why plain data: TRL's async GRPO pickles reward functions into a spawned worker, and
# `trl grpo --reward_funcs reward.uv_process` cannot pass arguments. So a reward object carries only
# this model (or nothing, meaning "read the environment at first call"); judges, caches and locks are
# rebuilt from it inside whichever process and event loop the reward ends up running in.
# Secrets are never stored: the API key is read by the judge from the variable named in its config.
ENV_URL, ENV_MODEL, ENV_CONFIG = "CUA_JUDGE_URL", "CUA_JUDGE_MODEL", "CUA_VERIFIER_CONFIG"

#: Tool names whose call is the agent's final answer (argument "answer"/"text"/... carries it).
DEFAULT_ANSWER_TOOLS = ["final_answer", "answer", "submit", "done", "terminate", "stop"]


class RewardSettings(BaseModel):
    """Everything a reward needs to build its verification session.

    `judge` holds `verifier.judge.config.JudgeConfig` fields (base_urls, model, timeouts, ...);
    `verifier` holds `verifier.config.VerifierConfig` fields. The three *hook* fields accept a
    dotted path or a module-level callable (both pickle), for tests and custom judges.

    `none_if_degraded`: stage names (as in `result.degraded`) that make a verification unfit as a
    reward. By default "rescoring" (every rescoring run failed: the process score is the agent's
    own action-only claim, not checked against screenshots) and "side_effects" (side-effect
    detection failed, so an unsafe run was never forced to fail). Such rollouts get None, like a
    failed verification, instead of a float the trainer would trust.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    judge: dict[str, Any] = Field(default_factory=dict)
    verifier: dict[str, Any] = Field(default_factory=dict)
    max_concurrency: int = Field(default=16, ge=1, description="rollouts verified at once per process")
    failure_ttl_s: float = Field(default=300.0, ge=0, description="how long a failed rollout stays failed")
    cache_size: int = Field(default=4096, ge=1, description="finished verifications kept (LRU)")
    batch_deadline_s: float | None = Field(
        default=900.0, gt=0, description="time budget of one reward call (a batch): rollouts not verified "
        "by then get None (JudgeDeadlineError); None: no limit")
    verify_deadline_s: float | None = Field(
        default=None, gt=0, description="time budget of one verification, queueing included (None: only "
        "the batch deadline)")
    combined_process_weight: float = Field(default=0.5, ge=0, le=1)
    answer_tools: list[str] = Field(default_factory=lambda: list(DEFAULT_ANSWER_TOOLS))
    strict: bool = Field(default=False, description="re-raise unexpected (non-verifier) exceptions")
    judge_factory: str | Callable[[], Any] | None = None
    verify_fn: str | Callable[..., Any] = "verifier.pipeline.verify"
    cache_factory: str | Callable[[], Any] | None = "verifier.cache.StageCache"
    none_if_degraded: frozenset[str] = Field(
        default=frozenset({"rescoring", "side_effects"}),
        description="degraded stages whose result is too weak to train on: the reward is None")
    rubrics: str | None = Field(default=None, description=(
        "a rubric file (`cua-verifier rubrics`, docs/rubrics.md): each task is scored against its rubric "
        "there (matched by task id, instruction hash checked) instead of one written per process"))
    rubrics_only: bool = Field(default=False, description=(
        "refuse (None / unscored) a rollout whose task has no rubric in the file or its `rubric` column, "
        "instead of generating one: what training should use, so the reward is stationary"))
    rubric_judge: dict[str, Any] = Field(default_factory=dict, description=(
        "JudgeConfig fields of the judge that writes rubrics when no file provides one (e.g. a stronger "
        "model); the scoring judge's fields fill the rest; empty: the scoring judge writes them"))
    require_screenshots: bool = Field(default=False, description=(
        "refuse a rollout without screenshots (its reward is None) instead of verifying it in "
        "action-only mode on the agent's own account (logged as uv_grounded = 0)"))

    @field_serializer("none_if_degraded")
    def _sorted_stages(self, stages: frozenset[str]) -> list[str]:
        return sorted(stages)  # JSON-able and order-stable (fingerprint, pickling)

    @classmethod
    def from_env(cls, **overrides: Any) -> RewardSettings:
        """CUA_VERIFIER_CONFIG (a JSON / YAML file, see `read_config_file`) then CUA_JUDGE_URL / CUA_JUDGE_MODEL,
        then `overrides`; `judge` and `verifier` are merged key by key, not replaced."""
        env = env_settings()
        data = read_config_file(env.verifier_config, what=ENV_CONFIG) if env.verifier_config else {}
        judge = {**(data.pop("judge", None) or {}), **env.judge_fields()}
        verifier = dict(data.pop("verifier", None) or {})
        overrides = normalise_config(dict(overrides))
        data.update(overrides)
        data["judge"] = {**judge, **(overrides.get("judge") or {})}
        data["verifier"] = {**verifier, **(overrides.get("verifier") or {})}
        try:
            return cls.model_validate(data)
        except ValueError as exc:
            raise ConfigError(f"invalid reward settings: {exc}") from exc

    def fingerprint(self) -> str:
        """Stable key: equal settings share one session (and so one cache) per process."""
        def name(v: Any) -> Any:
            return v if v is None or isinstance(v, str) else f"{v.__module__}.{v.__qualname__}"

        data = self.model_dump(exclude={"judge_factory", "verify_fn", "cache_factory"})
        data.update(judge_factory=name(self.judge_factory), verify_fn=name(self.verify_fn),
                    cache_factory=name(self.cache_factory))
        return json.dumps(data, sort_keys=True, default=str)


def normalise_config(data: dict[str, Any]) -> dict[str, Any]:
    """A settings dict with plain `VerifierConfig` keys moved under "verifier".

    Why: `score` took VerifierConfig fields ({"votes": 3}) and `score-dataset` took RewardSettings
    ({"verifier": {"votes": 3}, "judge": {...}}); one file format now serves both and the reward.
    A top-level key wins over the same key inside "verifier". Unknown keys are left for validation.
    """
    from .config import VerifierConfig

    out = dict(data)
    verifier = dict(out.pop("verifier", None) or {})
    for key in [k for k in out if k in VerifierConfig.model_fields and k not in RewardSettings.model_fields]:
        verifier[key] = out.pop(key)
    if verifier:
        out["verifier"] = verifier
    return out


#: Settings-file suffixes read as YAML (TRL and verl users keep their runs in YAML); others are JSON.
YAML_SUFFIXES = (".yaml", ".yml")


def read_config_file(path: str | os.PathLike[str], *, what: str = "--config") -> dict[str, Any]:
    """A JSON or YAML (`.yaml` / `.yml`) settings file: RewardSettings fields and/or VerifierConfig
    fields at top level. Both spell the same mapping; YAML is read with `safe_load` (no tags that
    build objects)."""
    yaml_file = os.fspath(path).lower().endswith(YAML_SUFFIXES)
    kind = "YAML" if yaml_file else "JSON"
    try:
        with open(path, encoding="utf-8") as fh:
            data = _load_yaml(fh, what, path) if yaml_file else json.load(fh)
    except (OSError, ValueError) as exc:  # json.JSONDecodeError and yaml.YAMLError (re-raised) are ValueErrors
        raise ConfigError(f"{what} {path}: cannot read {kind} config ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {path}: expected a {kind} mapping of settings (got {type(data).__name__})")
    return normalise_config(data)


def _load_yaml(fh: Any, what: str, path: Any) -> Any:
    try:
        import yaml
    except ImportError:
        raise ConfigError(f"{what} {path}: reading a YAML config needs PyYAML (pip install PyYAML; the "
                          "train, bench and publish extras bring it), or give the settings as JSON") from None
    try:
        return yaml.safe_load(fh)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from None


def resolve(ref: str | Callable[..., Any]) -> Callable[..., Any]:
    """A dotted path ``pkg.mod.attr`` (or ``pkg.mod:attr``) or a callable, as a callable."""
    if callable(ref):
        return ref
    module, _, attr = ref.replace(":", ".").rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot import {ref!r}: {exc}") from exc
