"""Ray actors' logs reach the driver (issue 35 §6): a warning an actor logs and the last words of an
actor that dies are printed by the driver, started as `score-dataset --ray` starts Ray; `--quiet`
(`log_to_driver=False`) keeps them out. The cluster runs in its own process, like test_ray_bind."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

DRIVER = """
import logging, os, sys, time, ray
from ray.exceptions import RayActorError
from verifier.distributed.actors import actor_logging
from verifier.distributed.ray_backend import init_ray

init_ray(None, environ={}, log_to_driver=sys.argv[1] == "on")

@ray.remote(num_cpus=0)
class Worker:
    def __init__(self):
        actor_logging()  # as ShardReader does

    def warn(self):
        logging.getLogger("verifier.sources.items").warning("row r7 failed: marker-warning-5521")
        logging.getLogger("verifier.sources.items").info("marker-info-never-shown")
        return True

    def die(self):
        print("marker-last-words-9034", file=sys.stderr, flush=True)
        os._exit(3)

w = Worker.remote()
assert ray.get(w.warn.remote())
try:
    ray.get(w.die.remote())
except RayActorError:
    print("driver saw the actor die", flush=True)
time.sleep(3)  # the log monitor forwards in batches
ray.shutdown()
"""


def _drive(mode: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("RAY_ADDRESS", None)
    got = subprocess.run([sys.executable, "-c", DRIVER, mode], capture_output=True, text=True, env=env,
                         timeout=180, check=True)
    assert "driver saw the actor die" in got.stdout
    return got.stdout + got.stderr


def test_actor_warnings_and_dying_words_reach_the_driver():
    out = _drive("on")
    warning = next(line for line in out.splitlines() if "marker-warning-5521" in line)
    assert "Worker" in warning and "WARNING verifier.sources.items" in warning  # named and formatted
    assert "marker-last-words-9034" in out
    assert "marker-info-never-shown" not in out


def test_quiet_keeps_them_out():
    out = _drive("off")
    assert "marker-warning-5521" not in out and "marker-last-words-9034" not in out
