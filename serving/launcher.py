"""Start a judge server from a `LaunchCommand`, wait until it is healthy, and stop it cleanly.

vLLM runs the API server and the engine core as separate processes (plus workers under tensor
parallelism), so the server is started in its own process group (its own session) and stopped by
signalling the whole group: killing only the parent would leave an engine holding the GPU or the
port. Used by `serve-judge` and by the end-to-end test fixture, so both exercise the same code.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from verifier.errors import ConfigError, JudgeUnavailableError

from .command import LaunchCommand


def probe_health(health_url: str, timeout_s: float = 2.0) -> bool:
    """True when GET /health answers 200 (vLLM answers it without an API key)."""
    try:
        with urllib.request.urlopen(health_url, timeout=timeout_s) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def wait_for_health(health_url: str, *, timeout_s: float = 600.0, interval_s: float = 1.0,
                    proc: subprocess.Popen | None = None, log_path: str | Path | None = None) -> float:
    """Poll `health_url` until it answers 200; return the seconds waited.

    Raises JudgeUnavailableError when `timeout_s` passes or `proc` exits first (the message carries
    the end of the server log, which is where the real reason is).
    """
    start = time.monotonic()
    while True:
        if probe_health(health_url):
            return time.monotonic() - start
        if proc is not None and proc.poll() is not None:
            raise JudgeUnavailableError(f"judge server exited with code {proc.returncode} before it was "
                                        f"healthy{_log_tail(log_path)}")
        if time.monotonic() - start > timeout_s:
            raise JudgeUnavailableError(f"judge server not healthy at {health_url} after {timeout_s:.0f}s"
                                        f"{_log_tail(log_path)}")
        time.sleep(interval_s)


def _log_tail(log_path: str | Path | None, n: int = 30) -> str:
    if not log_path or not Path(log_path).is_file():
        return ""
    lines = Path(log_path).read_text(errors="replace").splitlines()[-n:]
    return "\n--- last server log lines ---\n" + "\n".join(lines)


def ensure_api_key(environ: dict[str, str], var: str | None) -> bool:
    """Make sure `var` holds a key in `environ`; generate a session key if unset. True if generated."""
    if not var or environ.get(var):
        return False
    environ[var] = secrets.token_urlsafe(24)
    return True


def check_launchable(cmd: LaunchCommand) -> None:
    """Raise ConfigError (one line, with the fix) when the command's program is missing.

    Why: without it a missing judge environment surfaces as a FileNotFoundError traceback."""
    program = cmd.argv[0]
    path = shutil.which(program) if os.sep not in program else (program if os.access(program, os.X_OK) else None)
    if path is None:
        raise ConfigError(f"{program} not found: create the judge environment with `cua-verifier "
                          "setup-judge-env` (or pass --venv / set CUA_JUDGE_VENV to an existing one)")


def start_server(cmd: LaunchCommand, *, environ: Mapping[str, str] | None = None,
                 log: str | Path | IO | None = None) -> subprocess.Popen:
    """Start the server in a new session (own process group). `log`: a path, an open file, or None
    to inherit the caller's stdout/stderr."""
    env = cmd.launch_env(os.environ if environ is None else environ)
    check_launchable(cmd)
    out: IO | None
    if isinstance(log, (str, Path)):
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        out = open(log, "ab")  # noqa: SIM115 - handed to the child; closed with it
    else:
        out = log
    return subprocess.Popen(cmd.argv, env=env, stdout=out, stderr=subprocess.STDOUT if out else None,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def stop_server(proc: subprocess.Popen, *, grace_s: float = 20.0) -> None:
    """SIGTERM the server's process group, then SIGKILL whatever is left after `grace_s`."""
    if proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    _signal_group(proc, signal.SIGKILL)  # engine children may outlive the parent
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def kill_server(proc: subprocess.Popen) -> None:
    """SIGKILL the whole group at once (used by tests that simulate a crashed judge)."""
    _signal_group(proc, signal.SIGKILL)
    proc.wait(timeout=30)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # start_new_session: the group id is the child's pid
    except (ProcessLookupError, PermissionError):
        pass
