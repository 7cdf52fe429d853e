"""Run the service under uvicorn with a shutdown that drains before it closes.

uvicorn's own graceful shutdown waits for open requests and then cancels them, which a client sees
as a dropped connection. Here SIGTERM/SIGINT first makes the service refuse new work (503 +
Retry-After), lets in-flight verifications finish for `grace_s`, answers the rest 503, and only
then hands over to uvicorn's shutdown.

A stop asked for by SIGTERM or SIGINT that drained is a clean exit: 0. uvicorn raises the signal
again once it has shut down, so the process died of it (exit -15: a supervisor reads a crash,
issue 38 §8); here the signal is not raised again. A second SIGINT (force exit) cuts the drain
short and exits 128 + the signal, as `score` does.
"""
from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

import uvicorn

from verifier.errors import ConfigError
from verifier.settings import RewardSettings

from .app import create_app
from .config import ServiceConfig
from .core import RewardService
from .memory import settle_gc, tune_allocator
from .protocol import bounded_protocol


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, service: RewardService) -> None:
        super().__init__(config)
        self.service = service

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.servers and self.servers[0].sockets:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            auth = "API key required" if self.service.config.api_key() else "no API key (loopback)"
            print(f"reward service at http://{host}:{port} ({auth}); POST /v1/verify, GET /metrics",
                  flush=True)

    async def shutdown(self, sockets: Any = None) -> None:
        await self.service.drain()
        await super().shutdown(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's, without raising the captured signal again after the shutdown (see the module)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)

    def exit_code(self) -> int:
        forced = self.force_exit and self._captured_signals
        return 128 + int(self._captured_signals[-1]) if forced else 0


async def _probe(service: RewardService) -> None:
    """Build the judge once so a missing URL/model fails at start, not on the first request."""
    service.session.judge_for_loop()
    await service.session.aclose()


def serve(settings: RewardSettings, config: ServiceConfig, *, log_level: str = "warning") -> int:
    tune_allocator()  # before any worker thread exists (see memory.py)
    try:
        config.check()
        service = RewardService(settings, config)
        asyncio.run(_probe(service))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    app = create_app(settings, config, service)
    http = bounded_protocol(max_head_bytes=config.max_header_bytes, head_timeout_s=config.header_timeout_s,
                            linger_s=config.linger_s)
    uv = uvicorn.Config(app, host=config.host, port=config.port, log_level=log_level, access_log=False,
                        timeout_graceful_shutdown=int(config.grace_s) + 5, lifespan="off", http=http)
    settle_gc()  # the service is built: freeze it out of the collector's walks (see memory.py)
    server = _Server(uv, service)
    server.run()
    return server.exit_code()
