"""The loopback HTTP server for the task sites (stdlib only, a daemon thread, port 0).

Per-episode state: each episode gets a session id (`new_session`), which the environment sets as
the `uv_sid` cookie in its fresh browser context; every site keeps its state under that id, so an
episode starts from the site's initial state and never sees another episode's cart or orders.
Bounded: request bodies over 64 KiB get 413, at most `max_sessions` live (least recently used
dropped), binds to 127.0.0.1 only. `/_slow?s=N` answers after N seconds (at most 30): for
page-load timeout tests.
"""
from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from . import SITES
from .base import Page, frame

COOKIE = "uv_sid"
MAX_BODY = 64 * 1024


class SiteServer:
    """Serves every site in `SITES` under `/<site>/`; use as a context manager or start()/stop()."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, max_sessions: int = 512) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"the task sites bind to loopback only, not {host!r}")
        self.sites = {name: cls() for name, cls in SITES.items()}
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, dict[str, dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ---- sessions -----------------------------------------------------------------------------
    def new_session(self) -> str:
        sid = secrets.token_hex(8)
        with self._lock:
            self._sessions[sid] = {}
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        return sid

    def _site_state(self, sid: str, site: str) -> dict[str, Any]:
        with self._lock:
            per = self._sessions.setdefault(sid, {})
            self._sessions.move_to_end(sid)
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
            if site not in per:
                per[site] = self.sites[site].initial_state()
            return per[site]

    def state(self, sid: str, site: str) -> dict[str, Any]:
        """The (live) state of `site` in session `sid` (initial state if never touched)."""
        return self._site_state(sid, site)

    def drop_session(self, sid: str) -> None:
        with self._lock:
            self._sessions.pop(sid, None)

    # ---- HTTP ---------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> SiteServer:
        if self._thread is None:
            # poll_interval: stop() waits up to one interval (0.5 s by default) for the loop to notice
            self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                            name="task-sites", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> SiteServer:  # noqa: PYI034
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def dispatch(self, method: str, target: str, body: bytes, cookie: str | None) -> tuple[Page, str]:
        """Answer one request; returns the page and the session id it used."""
        url = urlsplit(target)
        query = dict(parse_qsl(url.query))
        form = dict(parse_qsl(body.decode("utf-8", "replace"))) if body else {}
        jar = SimpleCookie(cookie or "")
        sid = jar[COOKIE].value if COOKIE in jar else "anonymous"
        parts = url.path.strip("/").split("/", 1)
        if parts[0] == "_slow":
            time.sleep(min(float(query.get("s", "1") or 1), 30.0))
            return Page(frame("Slow page", "<p>Finally loaded.</p>")), sid
        if parts[0] == "":
            links = "".join(f"<div class='card'><a href='/{n}/'>{s.title}</a></div>" for n, s in self.sites.items())
            return Page(frame("Task sites", links)), sid
        site = self.sites.get(parts[0])
        if site is None:
            return Page.not_found("site"), sid
        rest = parts[1] if len(parts) > 1 else ""
        return site.handle(self._site_state(sid, site.name), method, rest, query, form), sid

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet: tests and training logs stay readable
                pass

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY:
                    self._send(Page(frame("Too large", "<p>Request too large.</p>"), status=413))
                    return
                body = self.rfile.read(length) if length else b""
                try:
                    page, _ = server.dispatch(method, self.path, body, self.headers.get("Cookie"))
                except Exception as exc:  # noqa: BLE001 - a site bug is a 500 page, never a dead server thread
                    page = Page(frame("Error", f"<p>Server error: {type(exc).__name__}</p>"), status=500)
                self._send(page)

            def _send(self, page: Page) -> None:
                data = page.body.encode("utf-8")
                self.send_response(page.status)
                if page.location:
                    self.send_header("Location", page.location)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                for k, v in page.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

        return Handler
