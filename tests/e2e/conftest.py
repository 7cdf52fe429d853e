"""The engine tier: a real vLLM server on CPU, serving a tiny random-weight Qwen2-VL.

The server is started through `serving`'s own command builder and launcher (the `cpu-tiny`
preset), so what is tested is what `serve-judge` runs. One server per session; a test that kills
it (to check crash handling) leaves it dead and the next test that needs it restarts it.

Where things come from (all overridable):
- judge venv: ``serving.demo.default_judge_venv()``: ``CUA_JUDGE_VENV`` or the checkout's ``.venv-judge``
  (what ``cua-verifier setup-judge-env --variant cpu`` creates, as tests/run_all.sh does);
- model: built into ``CUA_TINY_MODEL_DIR`` or ``.cache/tiny-qwen2vl`` (reused when up to date).
Without a judge venv the tier skips locally and fails loudly under CI (``CUA_REQUIRE_ENGINE=1`` or ``CI=true``).
"""
from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from engine_utils.tiny_qwen2vl import build_tiny_qwen2vl
from suite_env import missing

from serving.command import ServeConfig, build_command
from serving.launcher import kill_server, probe_health, start_server, stop_server, wait_for_health
from serving.presets import get_preset

API_KEY_ENV = "CUA_E2E_JUDGE_KEY"
HEALTH_TIMEOUT_S = float(os.environ.get("CUA_ENGINE_HEALTH_TIMEOUT", "420"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Engine:
    """A running (or restartable) judge server for the tests."""

    venv: Path
    model_dir: Path
    log_path: Path
    api_key: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    proc: subprocess.Popen | None = None
    config: ServeConfig | None = None
    starts: int = 0
    startup_s: list[float] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        assert self.config is not None
        return self.config.base_url

    @property
    def model(self) -> str:
        assert self.config is not None
        return self.config.served_model_name

    @property
    def media_dir(self) -> Path:
        """Where clients may put file:// screenshots (the server's --allowed-local-media-path)."""
        return self.log_path.parent / "media"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None and probe_health(self.config.health_url)

    def ensure_running(self) -> Engine:
        if self.alive():
            return self
        if self.proc is not None:
            stop_server(self.proc, grace_s=2)
        self.media_dir.mkdir(parents=True, exist_ok=True)
        self.config = ServeConfig(preset=get_preset("cpu-tiny"), model=str(self.model_dir), venv=str(self.venv),
                                  port=_free_port(), api_key_env=API_KEY_ENV, media_dir=str(self.media_dir))
        cmd = build_command(self.config)
        # Dev mode adds POST /reset_prefix_cache (loopback test server only): the prefix-cache
        # test measures a cold cache on this shared server instead of starting its own.
        environ = {**os.environ, API_KEY_ENV: self.api_key, "VLLM_SERVER_DEV_MODE": "1"}
        self.proc = start_server(cmd, environ=environ, log=self.log_path)
        self.starts += 1
        self.startup_s.append(wait_for_health(self.config.health_url, timeout_s=HEALTH_TIMEOUT_S,
                                              proc=self.proc, log_path=self.log_path))
        return self

    def reset_prefix_cache(self) -> None:
        """Empty vLLM's prefix cache (the server stays up): what follows sees a cold cache."""
        req = urllib.request.Request(self.base_url.removesuffix("/v1") + "/reset_prefix_cache", method="POST")
        with urllib.request.urlopen(req, timeout=60) as resp:
            assert resp.status == 200, resp.status

    def kill(self) -> None:
        """SIGKILL the whole server process group (a crashed judge)."""
        if self.proc is not None:
            kill_server(self.proc)

    def judge_config(self, **overrides):
        from verifier.judge.base import Sampling
        from verifier.judge.config import JudgeConfig

        os.environ[API_KEY_ENV] = self.api_key
        values = {"base_urls": [self.base_url], "model": self.model, "api_key_env": API_KEY_ENV,
                  "image_max_side": 224, "timeout_s": 60.0, "transport_retries": 1, "backoff_initial_s": 0.1,
                  "backoff_max_s": 0.5, "max_concurrency": 8,
                  # Random weights fill every string to its maxLength, and the tiny byte-level
                  # tokenizer spends 2-3 tokens on a non-ASCII character: give replies room.
                  "sampling": Sampling(max_tokens=8192)}
        values.update(overrides)
        return JudgeConfig(**values)


def _judge_venv() -> Path | None:
    from serving.demo import default_judge_venv

    venv = default_judge_venv()
    return venv if (venv / "bin" / "python").is_file() else None


@pytest.fixture(scope="session")
def judge_venv() -> Path:
    """The vLLM CPU environment; skip locally, fail in CI (suite_env.required_here) when missing."""
    venv = _judge_venv()
    if venv is None:
        missing("judge venv missing: run `bash serving/setup_judge_env.sh --cpu` (or set CUA_JUDGE_VENV)")
    return venv


@pytest.fixture(scope="session")
def tiny_model(judge_venv: Path) -> Path:
    """The random-weight tiny Qwen2-VL, built once into the cache dir (reused while up to date).

    Built with this environment's transformers when it has them, else with the judge venv's."""
    out = Path(os.environ.get("CUA_TINY_MODEL_DIR") or REPO / ".cache" / "tiny-qwen2vl")
    try:
        import tokenizers  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        subprocess.run([str(judge_venv / "bin" / "python"), str(REPO / "serving" / "tiny_model.py"), str(out)],
                       check=True, capture_output=True)
        return out
    return build_tiny_qwen2vl(out)


@pytest.fixture(scope="session")
def engine_session(judge_venv: Path, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    log_dir = Path(os.environ.get("CUA_ENGINE_LOG_DIR") or tmp_path_factory.mktemp("engine"))
    eng = Engine(venv=judge_venv, model_dir=tiny_model, log_path=log_dir / "vllm-server.log")
    t0 = time.monotonic()
    eng.ensure_running()
    print(f"\n[engine] vLLM CPU server healthy in {time.monotonic() - t0:.0f}s at {eng.base_url} "
          f"(log {eng.log_path})")
    yield eng
    if eng.proc is not None:
        stop_server(eng.proc)


@pytest.fixture
def engine(engine_session: Engine) -> Engine:
    """The session server, restarted first if an earlier test killed it."""
    return engine_session.ensure_running()
