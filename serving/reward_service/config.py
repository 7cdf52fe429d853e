"""Service settings and the one security rule: off loopback, an API key or no start at all."""
from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from verifier.errors import ConfigError
from verifier.network import is_loopback

DEFAULT_KEY_ENV = "CUA_REWARD_API_KEY"


class ServiceConfig(BaseModel):
    """How the reward service binds, authenticates and bounds its work."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=8012, ge=0, le=65535)
    api_key_env: str = DEFAULT_KEY_ENV
    media_root: str | None = Field(default=None, description="screenshot paths must resolve under it")
    max_body_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    max_batch: int = Field(default=64, ge=1)
    queue_size: int = Field(default=256, ge=1, description="trajectories admitted (running + waiting)")
    max_inflight_bytes: int = Field(default=384 * 2**20, ge=1024,
                                    description="request bytes held at once (admission by bytes)")
    admission_wait_s: float = Field(default=30.0, ge=0, description="how long a request waits for bytes "
                                    "to free before its 429")
    deadline_s: float = Field(default=600.0, gt=0, description="default per-request deadline")
    max_deadline_s: float = Field(default=3600.0, gt=0)
    grace_s: float = Field(default=30.0, ge=0, description="shutdown: time to finish in-flight work")
    body_timeout_s: float = Field(default=60.0, gt=0, description="a request body not all received by then: 408")
    max_header_bytes: int = Field(default=64 * 1024, ge=1024, description="a request head (request line and "
                                  "headers) over it: 431, before the API key is read")
    header_timeout_s: float = Field(default=10.0, gt=0, description="a request head not all received by then: 408")
    ready_cache_s: float = Field(default=5.0, ge=0, description="how long /ready reuses its probe of the judge")
    linger_s: float = Field(default=2.0, ge=0, description="a refusal before the body: how long what the client "
                            "still sends is read and dropped before the close, so it sees the answer")

    def api_key(self) -> str | None:
        """The key, or None when the variable is unset or blank (spaces are not a key)."""
        return (os.environ.get(self.api_key_env) or "").strip() or None

    def media_path(self) -> Path | None:
        return Path(self.media_root).resolve() if self.media_root else None

    def check(self) -> None:
        """Raise ConfigError for a configuration the service must refuse to start with."""
        if not is_loopback(self.host) and not self.api_key():
            raise ConfigError(f"serve-reward binds to {self.host!r} (not loopback): set an API key in "
                              f"${self.api_key_env} (clients send 'Authorization: Bearer <key>')")
        if self.media_root and not Path(self.media_root).is_dir():
            raise ConfigError(f"--media-root {self.media_root!r} is not a folder")

    def deadline(self, asked: float | None) -> float:
        return min(asked or self.deadline_s, self.max_deadline_s)
