"""Helpers for the reward-service tests: a counting loopback judge and the service as a real process."""
from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from PIL import Image

from reward.echo_judge import EchoJudgeServer
from verifier.trajectory import Screenshot, Step, Task, Trajectory

REPO = Path(__file__).resolve().parents[2]
RUBRIC_SCHEMA = "RubricDraft"  # the json_schema name of the rubric stage's reply


class LoopbackJudge(EchoJudgeServer):
    """The echo judge, counting requests per reply schema, with injected latency and faults."""

    def __init__(self, *, latency_s: float = 0.0, fault_rate: float = 0.0, seed: int = 0, **kw: Any) -> None:
        super().__init__(**kw)
        self.latency_s, self.fault_rate = latency_s, fault_rate
        self.by_schema: Counter[str] = Counter()
        self.faults = 0
        self._rng = random.Random(seed)
        self._count_lock = threading.Lock()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.latency_s:
            time.sleep(self.latency_s)
        with self._count_lock:
            fault = self._rng.random() < self.fault_rate
            if fault:
                self.faults += 1
            else:
                fmt = body.get("response_format") or {}
                self.by_schema[(fmt.get("json_schema") or {}).get("name", "?")] += 1
        if fault:
            return 503, {"error": {"message": "injected fault", "type": "server_error"}}
        return super().answer(path, body)

    @property
    def rubric_calls(self) -> int:
        return self.by_schema[RUBRIC_SCHEMA]


def png(color: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return buf.getvalue()


def trajectory(k: int, task: str = "task-a", *, shot: bytes | None = None) -> Trajectory:
    """A small distinct rollout of `task` (one step, one inline screenshot shared by the task)."""
    data = shot if shot is not None else png((40, 120, 200))
    return Trajectory(task=Task(id=task, instruction=f"Find the opening hours for {task}"),
                      steps=[Step(index=1, action="click", arguments={"x": k, "y": 10})],
                      screenshots=[Screenshot.from_bytes(data, step=1, timing="after")],
                      final_answer=f"answer {k}")


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
        cmd = [sys.executable, "-c", "from verifier.cli import main; raise SystemExit(main())",
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

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """A result without what legitimately differs between two runs (wall times, latencies)."""
    out = json.loads(json.dumps(result))
    out.pop("usage", None)
    return out
