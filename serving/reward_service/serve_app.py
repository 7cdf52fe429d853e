"""One replica of the reward service as a Ray Serve deployment.

Each replica is the single-process service of `app.py` in its own Ray actor: its own
`VerifierSession` (stage cache, single flight, judge client), its own admission (trajectories and
bytes), auth and body limits; its /health and /metrics answer for the whole deployment (through
`serve_board`). The task-affinity router sends every rollout of a task to the same replica, so its
rubric is still written once. Ray Serve stops routing to a replica before it is removed and waits
for its requests (`graceful_shutdown_timeout_s`); `__del__` then drains what is left as the single
process does on SIGTERM. `serve-reward` asks the replicas to drain before it deletes the deployment
(`serve_board.request_drain`), so at shutdown that is done already.
"""
from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest
from ray import serve

from verifier.settings import RewardSettings

from .app import create_app, local_health
from .config import ServiceConfig
from .core import RewardService
from .memory import settle_gc, tune_allocator
from .serve_board import Board
from .serve_gate import REPLICA_HEADER


@serve.ingress()
class RewardReplica:
    def __init__(self, settings: RewardSettings, config: ServiceConfig) -> None:
        tune_allocator()
        context = serve.get_replica_context()
        self.replica = context.replica_id.unique_id
        self.service = service = RewardService(settings, config)
        service.replica = self.replica
        self.asgi = create_app(settings, config, service)
        service.board = Board(context.app_name, context.deployment, self.replica, lambda: {
            "health": local_health(service), "metrics": generate_latest(service.metrics.registry).decode()},
            on_drain=service.drain)
        service.board.start()  # Ray Serve runs __init__ inside its event loop
        settle_gc()

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
        board = self.service.board
        await (board.drain if board.drain is not None else self.service.drain())  # drained once
        await board.stop()
