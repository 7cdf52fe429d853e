"""The service's ASGI app under a real uvicorn server on 127.0.0.1, in a thread of this process.

Why not the subprocess (`service_helpers.Service`): a fast test may need to script the pipeline
(`RewardSettings.verify_fn`) or read the service's state, and a process costs seconds to start.
The requests still go over real sockets through the real app (Gate, admission, body reader).
"""
from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

from serving.reward_service.app import create_app
from serving.reward_service.config import ServiceConfig
from serving.reward_service.core import RewardService
from verifier.settings import RewardSettings


@contextlib.contextmanager
def live_service(settings: RewardSettings, config: ServiceConfig | None = None) -> Iterator[tuple[str, Any]]:
    """(base URL, RewardService) of the app served on an ephemeral loopback port."""
    config = config or ServiceConfig()
    service = RewardService(settings, config)
    app = create_app(settings, config, service)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error",
                                           access_log=False, lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the service did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", service
    finally:
        server.should_exit = True
        thread.join(10)
