"""The process-wide task-site server, started on first use (loopback, port 0)."""
from __future__ import annotations

import atexit
import threading

from .sites.server import SiteServer

_lock = threading.Lock()
_server: SiteServer | None = None


def default_server() -> SiteServer:
    global _server
    with _lock:
        if _server is None:
            _server = SiteServer().start()
            atexit.register(_server.stop)
        return _server
