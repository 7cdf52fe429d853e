"""The CPU demo judge: a real vLLM server on a machine with no GPU, serving a random-weight model.

For a first run on a laptop or a CI box where no judge URL is configured: set up the CPU judge
environment if missing (about 2 minutes, once), build the tiny random-weight Qwen2-VL (seconds,
once) and serve it with the `cpu-tiny` preset. Every stage of the verifier then runs for real, but
the verdicts mean nothing: callers must say so in their output (`DEMO_WARNING`).

    from serving.demo import start_demo_judge
    judge = start_demo_judge()          # DemoJudge(base_url, model, api_key_env, proc)
    ...                                 # JudgeConfig(base_urls=[judge.base_url], model=judge.model,
    judge.stop()                        #             api_key_env=judge.api_key_env)

The demo always generates its own key, under a private variable name: reusing the user's
``CUA_JUDGE_API_KEY`` would hand a real provider key to a random-weight local server.
"""
from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from verifier.errors import JudgeUnavailableError

from .command import ServeConfig, build_command
from .launcher import start_server, stop_server, wait_for_health
from .presets import get_preset

SERVING_DIR = Path(__file__).resolve().parent
DEMO_KEY_ENV = "CUA_DEMO_JUDGE_API_KEY"  # private: never the user's CUA_JUDGE_API_KEY
DEMO_WARNING = ("NOTE: verdicts come from a random-weight DEMO judge (tiny Qwen2-VL on CPU) and mean "
                "nothing. Point the verifier at a real judge: serve one on a GPU node with `cua-verifier "
                "serve-judge --preset qwen2.5-vl-7b`, then set CUA_JUDGE_URL and CUA_JUDGE_MODEL.")


@dataclass
class DemoJudge:
    base_url: str
    model: str
    api_key_env: str  # set in this process's environment; give it to the client (JudgeConfig.api_key_env)
    proc: subprocess.Popen
    log_path: Path

    def stop(self) -> None:
        stop_server(self.proc)


def cache_dir() -> Path:
    return Path(os.environ.get("CUA_CACHE_DIR") or Path.home() / ".cache" / "cua-verifier")


def repo_root() -> Path | None:
    """The source checkout this package runs from, or None when installed (e.g. from a wheel)."""
    root = SERVING_DIR.parent
    return root if (root / "pyproject.toml").is_file() and (root / "verifier").is_dir() else None


def default_judge_venv() -> Path:
    """Where the judge environment lives, whatever the current directory.

    ``CUA_JUDGE_VENV`` when set; else ``<checkout>/.venv-judge`` when running from a source
    checkout (what `tests/run_all.sh` and the end-to-end fixture use); else the cache directory.
    Never relative to the cwd: `score` run from a data folder must not build a new multi-GB env.
    """
    if env := os.environ.get("CUA_JUDGE_VENV"):
        return Path(env).expanduser()
    root = repo_root()
    return root / ".venv-judge" if root is not None else cache_dir() / "judge-venv"


def ensure_judge_env(venv: Path, *, quiet: bool = False) -> Path:
    """Create the CPU judge venv with serving/setup_judge_env.sh unless it is already complete."""
    if not (venv / ".cua-judge-env").is_file():
        if not quiet:
            print(f"setting up the CPU demo judge environment in {venv} (once, about 2-3 minutes)...",
                  file=sys.stderr)
        subprocess.run(["bash", str(SERVING_DIR / "setup_judge_env.sh"), "--cpu", "--venv", str(venv)],
                       check=True, stdout=subprocess.DEVNULL if quiet else None)
    return venv


def ensure_tiny_model(venv: Path, model_dir: Path) -> Path:
    """Build the tiny model with the judge venv's python (it has transformers/tokenizers/torch), or
    keep the build there when it is up to date.

    The builder itself decides (under a second when current): its stamp covers `BUILD_VERSION` and
    the judge python's own corpus, so a build left by older code is rebuilt rather than served (a
    marker-exists check kept the 512-token tokenizer of before issue 24 in users' caches)."""
    subprocess.run([str(venv / "bin" / "python"), str(SERVING_DIR / "tiny_model.py"), str(model_dir)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return model_dir


def default_model_dir() -> Path:
    return cache_dir() / "tiny-qwen2vl"


def demo_config(*, venv: str | Path | None = None, model_dir: str | Path | None = None,
                port: int = 8765) -> ServeConfig:
    """The demo's launch configuration (what `start_demo_judge` runs and `--demo --dry-run` prints)."""
    return ServeConfig(preset=get_preset("cpu-tiny"), model=str(model_dir or default_model_dir()),
                       venv=str(venv or default_judge_venv()), port=port, api_key_env=DEMO_KEY_ENV)


def _free_port(preferred: int) -> int:
    """`preferred` if nothing listens there, else a free ephemeral port.

    Why: a health check against a port someone else already serves on would pass at once and send
    our requests (and API key) to that other server.
    """
    for candidate in (preferred, 0):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise JudgeUnavailableError("no free loopback port for the demo judge")


def start_demo_judge(*, venv: str | Path | None = None, model_dir: str | Path | None = None,
                     port: int = 8765, health_timeout_s: float = 600.0, quiet: bool = False) -> DemoJudge:
    """Set up (if needed) and start the demo judge; returns once /health answers.

    Raises:
        JudgeUnavailableError: the server did not become healthy (the message has the log tail).
        subprocess.CalledProcessError: the environment setup or the model build failed.
    """
    cache = cache_dir()
    port = _free_port(port)
    venv = ensure_judge_env(Path(venv) if venv else default_judge_venv(), quiet=quiet)
    model = ensure_tiny_model(venv, Path(model_dir) if model_dir else default_model_dir())
    cfg = demo_config(venv=venv, model_dir=model, port=port)
    os.environ[DEMO_KEY_ENV] = secrets.token_urlsafe(16)  # fresh every start; the client reads it here
    log_path = cache / "demo-judge.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # The server's environment gets the demo key, and not the user's real one.
    environ = {k: v for k, v in os.environ.items() if k != "CUA_JUDGE_API_KEY"}
    proc = start_server(build_command(cfg), environ=environ, log=log_path)
    try:
        wait_for_health(cfg.health_url, timeout_s=health_timeout_s, proc=proc, log_path=log_path)
    except JudgeUnavailableError:
        stop_server(proc)
        raise
    return DemoJudge(base_url=cfg.base_url, model=cfg.served_model_name, api_key_env=DEMO_KEY_ENV, proc=proc,
                     log_path=log_path)
