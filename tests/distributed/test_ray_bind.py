"""`score-dataset --ray`: a local cluster binds loopback, and `--ray ADDRESS` joins a running one
(issue 20 §9). The cluster runs in its own process: the other Ray tests hold a cluster in theirs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

#: Starts Ray the way `score-dataset --ray [ADDRESS]` does and prints where it lives.
PROBE = """
import json, sys, psutil, ray
from verifier.distributed.ray_backend import init_ray
target = sys.argv[1] if len(sys.argv) > 1 else None
init_ray(target, environ={})
node = ray.nodes()[0]
listening = set()
if target is None or target == "local":  # every socket the local cluster's processes listen on
    for p in psutil.Process().children(recursive=True):
        try:
            listening |= {c.laddr.ip for c in p.net_connections("inet") if c.status == psutil.CONN_LISTEN}
        except psutil.Error:
            pass
print(json.dumps({"gcs": ray.get_runtime_context().gcs_address, "node_ip": node["NodeManagerAddress"],
                  "listening": sorted(listening)}))
ray.shutdown()
"""


def _probe(*target: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("RAY_ADDRESS", None)
    out = subprocess.run([sys.executable, "-c", PROBE, *target], capture_output=True, text=True, env=env,
                         timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_local_cluster_binds_loopback_only():
    got = _probe()
    assert got["gcs"].startswith("127.0.0.1:") and got["node_ip"] == "127.0.0.1", got
    assert got["listening"] and set(got["listening"]) <= {"127.0.0.1", "::ffff:127.0.0.1"}, got["listening"]


def test_ray_address_joins_and_ray_address_env_is_honoured():
    """`--ray ADDRESS` joins that cluster (no new one, no loopback mode forced on a remote one);
    plain `--ray` joins $RAY_ADDRESS when set, else starts the private loopback cluster."""
    from verifier.distributed.ray_backend import ray_init_kwargs

    assert ray_init_kwargs("10.0.0.5:6379", environ={}) == {"address": "10.0.0.5:6379", "log_to_driver": True}
    assert ray_init_kwargs("auto", environ={})["address"] == "auto"
    assert ray_init_kwargs(None, environ={"RAY_ADDRESS": "ray://h:10001"})["address"] == "ray://h:10001"
    local = ray_init_kwargs("local", environ={})
    assert local["address"] == "local" and local["_node_ip_address"] == "127.0.0.1"
