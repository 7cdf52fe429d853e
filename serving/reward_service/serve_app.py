"""One replica of the reward service as a Ray Serve deployment.

Each replica is the single-process service of `app.py` in its own Ray actor: its own
`VerifierSession` (stage cache, single flight, judge client), its own admission (trajectories and
bytes), auth, body limits, /health and /metrics. The task-affinity router sends every rollout of a
task to the same replica, so its rubric is still written once. Ray Serve stops routing to a replica
before it is removed and waits for its requests (`graceful_shutdown_timeout_s`); `__del__` then
drains what is left as the single process does on SIGTERM.
"""
from __future__ import annotations

from typing import Any

from ray import serve

from verifier.settings import RewardSettings

from .app import create_app
from .config import ServiceConfig
from .core import RewardService
from .memory import tune_allocator

REPLICA_HEADER = b"x-cua-replica"


@serve.ingress()
class RewardReplica:
    def __init__(self, settings: RewardSettings, config: ServiceConfig) -> None:
        tune_allocator()
        self.replica = serve.get_replica_context().replica_id.unique_id
        self.service = RewardService(settings, config)
        self.service.replica = self.replica
        self.asgi = create_app(settings, config, self.service)

    def __serve_build_asgi_app__(self) -> Any:
        app, tag = self.asgi, (REPLICA_HEADER, self.replica.encode())

        async def tagged(scope: dict, receive: Any, send: Any) -> None:
            async def send_tagged(message: dict) -> None:
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [*message.get("headers", []), tag]}
                await send(message)
            await app(scope, receive, send_tagged)

        return tagged

    async def __del__(self) -> None:
        await self.service.drain()
