"""Helpers for the reward-service tests: a counting loopback judge and the service as a real process."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from serving.perf.loadtest import LoopbackJudge, png, trajectory  # noqa: F401 (re-exported)

REPO = Path(__file__).resolve().parents[2]


def write_config(path: Path, **judge: Any) -> Path:
    """A --config file with a fast-retrying judge client (the loopback judge's faults are brief)."""
    cfg = {"judge": {"backoff_initial_s": 0.05, "backoff_jitter_s": 0.05, "backoff_max_s": 0.5,
                     "timeout_s": 30, **judge}}
    path.write_text(json.dumps(cfg))
    return path


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(REPO), e.get("PYTHONPATH", "")])
    return e


class Service:
    """`cua-verifier serve-reward --port 0 ...` as a subprocess; `.url` once it printed its address."""

    def __init__(self, judge_url: str, *args: str, extra_env: dict[str, str] | None = None) -> None:
        cmd = [sys.executable, "-c", "from cua_verifier.cli import main; raise SystemExit(main())",
               "serve-reward", "--port", "0", "--judge-url", judge_url, "--model", "echo", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**env(), **(extra_env or {})})
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        if " at " not in line:
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""  # type: ignore[union-attr]
            self.stop()
            raise RuntimeError(f"service did not start: {line!r} {err}")
        self.url = line.split(" at ", 1)[1].split()[0]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self) -> Service:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """A result without what legitimately differs between two runs (wall times, latencies)."""
    out = json.loads(json.dumps(result))
    out.pop("usage", None)
    return out


class NoJudge:
    """The judge of a service whose `verify_fn` is scripted: nothing to call, only to close."""

    async def aclose(self) -> None:
        pass


def no_judge() -> NoJudge:
    """`judge_factory` for a scripted `verify_fn`."""
    return NoJudge()


def verify_in_flight(svc: Any, traj: Any) -> tuple[Any, list]:
    """POST `traj` to /v1/verify on a thread and return once the service has it queued:
    (the thread, a list that gets its response), for tests that stop the service meanwhile."""
    import threading
    import time

    import httpx

    got: list = []
    t = threading.Thread(target=lambda: got.append(
        httpx.post(f"{svc.url}/v1/verify", json={"trajectory": traj.model_dump(mode="json")}, timeout=60)))
    t.start()
    deadline = time.monotonic() + 30
    while httpx.get(f"{svc.url}/health").json()["queue_depth"] == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    return t, got
