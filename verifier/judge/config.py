"""Configuration of the judge backend: where the judge runs and how hard to try.

Every knob lives here once, documented by its attribute docstring, so the CLI, the TRL reward
config and the tests all describe the same thing. The API key itself is never a field: the config
names the environment variable that holds it, so it cannot leak through `repr`, logs or a saved
result's `config` block.

Example::

    cfg = JudgeConfig(base_urls=["http://127.0.0.1:8010/v1"], model="judge")
    cfg = JudgeConfig.from_env(max_concurrency=4)   # CUA_JUDGE_URL / CUA_JUDGE_MODEL / CUA_JUDGE_API_KEY
"""
from __future__ import annotations

import os
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import ConfigError
from .base import Sampling

DEFAULT_API_KEY_ENV = "CUA_JUDGE_API_KEY"
#: Sent when no key is configured: local `vllm serve` accepts anything, the SDK needs a string.
PLACEHOLDER_API_KEY = "EMPTY"


class JudgeConfig(BaseModel):
    """How to reach the judge and how much effort one logical call may cost."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    base_urls: list[str] = Field(min_length=1)
    """OpenAI-compatible base URLs (e.g. ``http://host:8010/v1``). Several URLs are replicas of one
    judge: load is spread across them and a refused connection fails over to another. A URL with
    no path gets ``/v1`` appended."""
    model: str = Field(min_length=1)
    """Model id sent in every request (the served model name, e.g. ``--served-model-name judge``)."""
    api_key_env: str = DEFAULT_API_KEY_ENV
    """Name of the environment variable holding the API key (unset: a placeholder key is sent)."""
    max_concurrency: int = Field(default=128, ge=1, le=1024)
    """Most requests in flight at once per endpoint (per event loop); the rest queue. vLLM batches
    whatever is in flight, and one verification fans out one relevance call per distinct
    screenshot (75 for a 100-step run): below that, the round splits into extra waves. Size it to
    the server's ``--max-num-seqs`` (vLLM's default: 1024 on H100/H200, 256 on other GPUs) divided
    by the client processes sharing the server; lower it for a rate-limited provider."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Timeout of one HTTP request; a timeout is a transport failure and is retried."""
    transport_retries: int = Field(default=4, ge=0, le=10)
    """Extra HTTP attempts after timeouts, refused connections, 429 and 5xx (first layer)."""
    flaky_retries: int = Field(default=9, ge=0, le=20)
    """Extra HTTP attempts after a 5xx or a 200 that is not a chat completion while the endpoint
    answers other requests (a success among its last ``breaker_window``): such a judge is up but
    flaky, and each attempt is a fresh draw (at 60% 500s, 5 attempts lose 7.8% of calls, 10 lose
    0.6%). A judge failing every request gets ``transport_retries`` only, and its breaker opens.
    Their backoff stays at the last transport retry's (it does not keep doubling), and all attempts
    and backoffs stay within the call's ``call_deadline_share``. No effect when it is below
    ``transport_retries``."""
    reask_retries: int = Field(default=2, ge=0, le=5)
    """Extra attempts after invalid or truncated output, each showing the model its bad reply and
    the validation error (second layer). Truncation is re-asked at most once."""
    backoff_initial_s: float = Field(default=0.5, ge=0)
    """First transport backoff; doubles per retry, plus random jitter."""
    backoff_max_s: float = Field(default=20.0, ge=0)
    """Upper bound of one transport backoff."""
    backoff_jitter_s: float = Field(default=0.5, ge=0)
    """Most random seconds added to each transport backoff (de-synchronises many clients)."""
    retry_after_max_s: float = Field(default=60.0, ge=0)
    """Cap on a server's ``Retry-After`` (429/503); the header is honoured up to this."""
    breaker_failures: int = Field(default=20, ge=0)
    """Fewest recent requests of one endpoint its circuit breaker judges on (0: no breaker). The
    circuit opens when at least this many of its last ``breaker_window`` requests are known and at
    least ``breaker_failure_ratio`` of them failed (timeouts, refused/reset connections, 5xx,
    malformed 200s): the judge is down, and calls fail fast with ``JudgeCircuitOpenError`` instead
    of retrying. A flaky judge (a mix of answers and failures) stays under the ratio: retries serve it."""
    breaker_cooldown_s: float = Field(default=30.0, gt=0)
    """Seconds an open circuit refuses requests; then one probe request tests the endpoint
    (success closes the circuit, failure opens it again)."""
    breaker_window: int = Field(default=40, ge=1)
    """How many of an endpoint's most recent requests the failure ratio is taken over."""
    breaker_failure_ratio: float = Field(default=0.95, gt=0, le=1)
    """Share of failed requests in the window that means "down" (see ``breaker_failures``)."""
    breaker_stalls: int = Field(default=3, ge=0)
    """Timeouts in a row (no answer between) that open the circuit at once, whatever the window
    holds: each costs a whole timeout, and a hung judge sends no quick refusals (0: off)."""
    call_deadline_share: float = Field(default=0.34, gt=0, le=1)
    """Share of the time left to the enclosing deadline (a verification's or a reward batch's) that
    one logical call may spend across its transport retries. Stages run one after another, so a
    judge that stalls on the first one still leaves the breaker time to learn and the rest of the
    verification time to fail fast, instead of one call's retries eating the whole budget."""
    structured_output: Literal["json_schema", "json_object"] = "json_schema"
    """``json_schema``: constrained decoding via ``response_format`` (vLLM, OpenAI). ``json_object``:
    fallback for providers without it; the schema goes into the system prompt and the reply is
    validated (and re-asked) client-side."""
    image_max_side: int | None = Field(default=None, ge=16)
    """Screenshots are downscaled so their longest side is at most this (None: no limit)."""
    image_max_pixels: int | None = Field(default=1_310_720, ge=256)
    """...and so width*height is at most this (None: no limit). Both limits apply. The default is
    the largest preset's processor limit (Qwen3-VL: 1280 x 32 x 32): a 1440x900 capture is sent as
    its original bytes, with no decode or re-encode (the server resizes for the model anyway)."""
    relevance_image_max_side: int | None = Field(default=None, ge=16)
    """Longest side of the screenshots in the relevance fan-out (a coarse judgment: which
    screenshots bear on which criterion), where every screenshot is sent once. None: as
    `image_max_side` (the default, until the calibration suite shows a smaller size loses nothing).
    Evidence, rescoring and outcome always get `image_max_side`. Savings measured in
    docs/performance-scaling.md."""
    image_format: Literal["png", "jpeg"] = "png"
    """Encoding of screenshots that must be downscaled (JPEG: ~10x faster to encode and ~3x
    smaller than PNG, lossy on text); screenshots within the limits are sent as they are."""
    jpeg_quality: int = Field(default=85, ge=1, le=95)
    """JPEG quality when ``image_format == "jpeg"``."""
    image_cache_size: int = Field(default=512, ge=0)
    """Encoded screenshots kept in memory (LRU, keyed by content hash): a GRPO group re-sends the
    same pages many times and each is encoded once."""
    image_cache_mb: float = Field(default=256.0, ge=0)
    """Bound on the bytes that cache holds (the URLs' text), whichever of the two limits comes first:
    a count alone lets 512 full-size captures pin ~0.5 GB."""
    image_media_dir: str | None = None
    """Send screenshots as ``file://`` URLs of files written once (content-addressed) into this
    directory instead of base64 data URLs: for a vLLM judge on the same host started with
    ``--allowed-local-media-path`` covering it (``serve-judge --media-dir``). None: data URLs."""
    image_uuid: bool = False
    """Add vLLM's per-item ``uuid`` (the content hash) to image parts so the server's media cache
    can hit across requests. Off by default: strict OpenAI endpoints reject unknown keys."""
    cache_dir: str | None = None
    """Directory of the on-disk response cache (None: no cache). Only deterministic calls are
    cached (temperature 0 or an explicit seed)."""
    sampling: Sampling = Field(default_factory=Sampling)
    """Default sampling when a call passes none. Its ``max_tokens`` is a floor: each call sends
    the worst-case reply size of its output schema (see ``max_tokens_cap``) when that is larger."""
    max_tokens_cap: int = Field(default=8192, ge=1)
    """Most ``max_tokens`` one call may ask for when sized from its output schema: a weak judge
    fills every bounded field, and the largest stage replies (rubric, evidence) exceed 2048 tokens.
    Set it at or below ``sampling.max_tokens`` to always send the configured value."""

    context_tokens: int | None = Field(default=None, ge=1024)
    """The judge's context length in tokens, for servers that do not report it (vLLM's
    ``/v1/models`` does: ``max_model_len``). Every call is budgeted against it before it is sent
    (`verifier.budget`); None with no report and no ``preset``: calls are not budgeted."""
    preset: str | None = None
    """The ``serve-judge`` preset the server was started with (e.g. ``qwen2.5-vl-7b``): its
    per-image pixel limit sizes each screenshot's tokens, and its context stands in when the
    server reports none. None: the Qwen2.5-VL image limits (at most 1282 tokens an image)."""
    chars_per_token: float = Field(default=2.5, gt=0.5, le=8.0)
    """Characters per token assumed for text when the server has no ``/tokenize`` endpoint
    (conservative: BPE tokenizers average 3.5-4.5 on English)."""

    @field_validator("base_urls")
    @classmethod
    def _normalise_urls(cls, urls: list[str]) -> list[str]:
        out = []
        for url in urls:
            url = url.strip().rstrip("/")
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"judge URL {url!r} must look like http://host:port/v1")
            out.append(url if parts.path else url + "/v1")
        return out

    def api_key(self) -> str:
        """The key from the environment (read at call time, never stored on the config)."""
        return os.environ.get(self.api_key_env) or PLACEHOLDER_API_KEY

    @classmethod
    def from_env(cls, **overrides: Any) -> JudgeConfig:
        """Build from ``CUA_JUDGE_URL`` (comma-separated replicas) and ``CUA_JUDGE_MODEL``.

        Args:
            **overrides: fields that win over the environment (e.g. ``max_concurrency=4``).

        Raises:
            ConfigError: a required variable is missing or a value is invalid.
        """
        from ..settings import env_settings  # the one parser of CUA_* (verifier/settings.py)

        values: dict[str, Any] = env_settings().judge_fields()
        values.update(overrides)
        missing = [env for key, env in (("base_urls", "CUA_JUDGE_URL"), ("model", "CUA_JUDGE_MODEL"))
                   if not values.get(key)]
        if missing:
            raise ConfigError(f"judge not configured: set {' and '.join(missing)} "
                              "(or pass --judge-url/--model)")
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigError(f"invalid judge configuration: {exc}") from exc
