"""`score-dataset --ray ADDRESS` joins a cluster that is already running (issue 20 §9), live.

A head is started with `ray start --head --block` on 127.0.0.1 (free ports, its own temp dir, so it
shares nothing with other Ray users of the machine) in a session of its own; the command runs as a
separate process against its address with a loopback echo judge. Teardown stops the head by its own
process (SIGTERM: `--block` then stops the processes it started), never with `ray stop`, which
would stop every Ray cluster of the user. Run Ray tests under `flock /tmp/cua-ray.lock`.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

from dist_helpers import judge_settings, write_source

from serving.perf.loadtest import LoopbackJudge

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
START_S = 90.0  # a head came up in 10-30 s on a loaded 2-core machine
RAY_CLI = "import sys; from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()"
CLI = "import sys; from cua_verifier.cli import main; sys.exit(main(sys.argv[1:]))"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: Ray 2.60 turns token authentication on for `ray start` when ~/.ray/auth_token exists (left by
#: any earlier Ray run of the user), but never for a driver given an explicit address: the join then
#: fails after ~20 s of "InvalidAuthToken". Both sides get this run's own token, whatever ~/.ray holds.
TOKEN = secrets.token_hex(32)


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # a single-machine head may keep 127.0.0.1
           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": TOKEN}
    env.pop("RAY_ADDRESS", None)
    return env


@pytest.fixture
def head() -> Iterator[tuple[str, Path]]:
    """(address, temp dir) of a one-CPU head on loopback."""
    temp = Path(tempfile.mkdtemp(prefix="cuaray", dir="/tmp"))  # short: Ray's socket paths are bounded
    port = _free_port()
    ports = {f"--{name}": str(_free_port()) for name in ("dashboard-agent-listen-port", "dashboard-agent-grpc-port",
                                                          "metrics-export-port", "runtime-env-agent-port")}
    log = (temp / "head.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-c", RAY_CLI, "start", "--head", "--block", "--node-ip-address=127.0.0.1",
         f"--port={port}", "--num-cpus=1", "--include-dashboard=false", "--disable-usage-stats",
         f"--temp-dir={temp}", *(f"{k}={v}" for k, v in ports.items())],
        stdout=log, stderr=subprocess.STDOUT, env=_env(), start_new_session=True)
    try:
        deadline = time.monotonic() + START_S
        while "block forever" not in (temp / "head.log").read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"ray head not up after {time.monotonic() - deadline + START_S:.0f} s "
                            f"(exit {proc.poll()}):\n{(temp / 'head.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield f"127.0.0.1:{port}", temp
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever of this session is left (ours alone)
        except ProcessLookupError:
            pass
        log.close()
        left = [p.pid for p in psutil.process_iter(["cmdline"]) if str(temp) in " ".join(p.info["cmdline"] or [])]
        shutil.rmtree(temp, ignore_errors=True)
        assert not left, f"processes of the test's Ray head left running: {left}"


def test_ray_address_joins_a_running_head_and_scores_each_row_once(head, tmp_path):
    address, temp = head
    src = write_source(tmp_path / "rollouts.jsonl", tasks=3, per_task=4)
    out, cfg = tmp_path / "out.jsonl", tmp_path / "cfg.json"
    with LoopbackJudge(latency_s=0.01) as judge:
        cfg.write_text(json.dumps({"judge": judge_settings(judge.url)}))
        run = subprocess.run([sys.executable, "-c", CLI, "score-dataset", str(src), "--out", str(out),
                              "--config", str(cfg), "--no-progress", "--ray", address, "--actors", "2",
                              "--actor-cpus", "0.25"],
                             capture_output=True, text=True, env=_env(), timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    ids = [r["id"] for r in rows]
    assert sorted(ids) == sorted(f"rollouts.jsonl#{k}" for k in range(12)) and len(set(ids)) == 12
    assert all(r["status"] == "scored" for r in rows)
    assert judge.by_schema["Outcome"] == 12 and judge.rubric_calls == 3  # each row once, each task's rubric once
    # it joined this head (its driver logged into the head's session), it did not start a cluster of its own
    assert list(temp.glob("session_*/logs/python-core-driver-*")), sorted(p.name for p in temp.glob("session_*/logs/*"))
