"""`serve-reward --replicas N [--ray ADDRESS]`: the reward service as a Ray Serve deployment.

Why Ray Serve: one service process is bound to one core (parsing data-URL bodies and the pipeline's
own work), and a second process on another port would split a group's rollouts. Here N replicas
(each the single-process service, `serve_app`) sit behind Ray Serve's HTTP proxy on one address, on
one node or many, and the task-affinity router (`affinity`) keeps every rollout of a task on one
replica. Clients keep their URL; the proxy runs the auth/size gate (`serve_gate`) before a byte of
the body is read.

Without ADDRESS a private local Ray instance is started (bound to 127.0.0.1, as `score-dataset
--ray`), with the gate configured for its proxy through the environment it inherits. With ADDRESS
the running cluster is joined; its proxies must have been started with the gate (see
docs/scaling-serve.md), which is checked before the address is printed. SIGTERM/SIGINT first drain
every replica (as one process drains: 503 + Retry-After for new requests, `--grace-s` for running
ones), then delete the deployment; a local Ray instance is then shut down.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from typing import Any

from verifier.errors import ConfigError
from verifier.settings import RewardSettings

from .config import ServiceConfig

APP_NAME = "cua-reward"
DEPLOYMENT = "RewardReplica"
#: Ray's size above which an object (an actor call's argument or result) goes through the shared-
#: memory object store instead of inline. The bodies the proxy hands a replica are such results:
#: through the store, the pages a load touched stay resident in /dev/shm, mapped by the proxy and
#: every replica, until Ray stops (~370 MB after 64 M = 20 rollouts on 2 replicas, and more for
#: larger bursts, up to the store's size: 30% of memory). A local instance sends anything up to
#: the body limit inline, so what a load leaves behind follows the bytes in flight. Measured with
#: `recipes/benchmark_service.py --real -m 20 --n 64 --clients 64 --replicas 2` (3 runs each): the
#: deployment's PSS 10 s after the load 1.94-2.22 GB against 2.12-2.25 GB (the runs' spread is as
#: large as the gain), CPU the same within the noise; what it bounds is the store's share.
INLINE_ENV = "RAY_max_direct_call_object_size"


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _client_host(host: str) -> str:
    return {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)


def deployment_options(config: ServiceConfig, replicas: int, cpus: float) -> dict[str, Any]:
    """Ray Serve options: N replicas, the affinity router, Ray's queue above our own admission."""
    from ray.serve.config import RequestRouterConfig

    from .affinity import TaskAffinityRouter

    actor: dict[str, Any] = {"num_cpus": cpus}
    key = config.api_key()
    if key:  # the replica's own Gate checks it too; a joined cluster's workers lack our environment
        actor["runtime_env"] = {"env_vars": {config.api_key_env: key}}
    return {"name": DEPLOYMENT, "num_replicas": replicas,
            "max_ongoing_requests": config.queue_size + 32,  # our 429 + Retry-After speaks first
            "graceful_shutdown_timeout_s": config.grace_s + 5, "graceful_shutdown_wait_loop_s": 0.5,
            "request_router_config": RequestRouterConfig(request_router_class=TaskAffinityRouter),
            "ray_actor_options": actor}


def check_gate(url: str) -> None:
    """Refuse to serve behind a proxy that does not run the gate (auth would follow the body)."""
    import httpx

    resp = httpx.get(url + "/health", timeout=30)
    if resp.headers.get("x-cua-gate") != "proxy":
        raise ConfigError("Ray Serve's HTTP proxy does not run the reward service's gate (auth and size "
                          "checks before the body): start the cluster's nodes with "
                          "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH=serving.reward_service.serve_gate:"
                          "proxy_middlewares (see docs/scaling-serve.md)")


class ServeDeployment:
    """The Ray side of `serve-reward --replicas`: start (Ray, Serve, the deployment), rescale, stop.

    Also what the tests drive in-process (1 replica, then 2, on one Ray instance)."""

    def __init__(self, settings: RewardSettings, config: ServiceConfig, ray_address: str | None = None) -> None:
        self.settings, self.config, self.ray_address = settings, config, ray_address
        self.port = config.port or _free_port(config.host)
        self.url = f"http://{_client_host(config.host)}:{self.port}"
        self.local = ray_address in (None, "local") and not os.environ.get("RAY_ADDRESS")
        self._saved_env: dict[str, str | None] = {}

    def start(self, replicas: int) -> str:
        from verifier.distributed.ray_backend import init_ray

        from .serve_gate import CALLBACK, CALLBACK_ENV, GATE_ENV, gate_settings

        cfg = self.config
        # Inherited by the local instance's processes (its proxy loads the gate from them).
        head = {"max_head_bytes": cfg.max_header_bytes, "head_timeout_s": cfg.header_timeout_s,
                "linger_s": cfg.linger_s}
        env = {GATE_ENV: gate_settings(cfg.api_key_env, cfg.max_body_bytes, cfg.body_timeout_s, head),
               CALLBACK_ENV: CALLBACK}
        if self.local and not os.environ.get(INLINE_ENV):
            env[INLINE_ENV] = str(cfg.max_body_bytes + 2**20)
        for name, value in env.items():
            self._saved_env[name] = os.environ.get(name)
            os.environ[name] = value
        from ray import serve

        init_ray(self.ray_address)
        serve.start(http_options={"host": cfg.host, "port": self.port})
        self.deploy(replicas)
        check_gate(self.url)
        return self.url

    def deploy(self, replicas: int) -> None:
        """Deploy N replicas (again: Ray Serve adds or removes replicas to match)."""
        import ray
        from ray import serve

        from .serve_app import RewardReplica
        from .serve_board import request_drain

        request_drain(APP_NAME, DEPLOYMENT, on=False)  # a drain asked of an earlier deployment
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        per_replica = min(1.0, cpus / replicas) if self.local else 1.0
        app = serve.deployment(RewardReplica).options(**deployment_options(self.config, replicas, per_replica))
        serve.run(app.bind(self.settings, self.config), name=APP_NAME, route_prefix="/")

    def delete(self) -> None:
        """Drain every replica as one process drains (new requests: 503 + Retry-After; running ones
        finish within `--grace-s`), then delete the deployment, which then stops at once."""
        from ray import serve

        from .serve_board import PERIOD_S, request_drain, wait_drained

        request_drain(APP_NAME, DEPLOYMENT)
        if not wait_drained(APP_NAME, DEPLOYMENT, self.config.grace_s + 3 * PERIOD_S):
            print("warning: replicas not drained in time; deleting anyway", file=sys.stderr)
        serve.delete(APP_NAME)
        request_drain(APP_NAME, DEPLOYMENT, on=False)

    def stop(self) -> None:
        """Drain and delete the deployment; a local Ray instance is then shut down."""
        import ray
        from ray import serve

        try:
            if ray.is_initialized():
                self.delete()
                if self.local:
                    serve.shutdown()
        finally:
            ray.shutdown()
            for name, value in self._saved_env.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def serve_replicas(settings: RewardSettings, config: ServiceConfig, *, replicas: int,
                   ray_address: str | None) -> int:
    import asyncio

    from .core import RewardService
    from .server import _probe

    try:
        config.check()
        asyncio.run(_probe(RewardService(settings, config)))  # a missing judge URL fails here, not later
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    dep = ServeDeployment(settings, config, ray_address)
    stop = threading.Event()
    try:
        url = dep.start(replicas)
        auth = "API key required" if config.api_key() else "no API key (loopback)"
        print(f"reward service at {url} ({auth}); {replicas} replica(s) on Ray Serve, task affinity; "
              f"POST /v1/verify, GET /metrics", flush=True)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        while not stop.wait(1.0):
            pass
        return 0
    except (ConfigError, RuntimeError) as exc:  # RuntimeError: Ray Serve could not deploy the replicas
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        dep.stop()
