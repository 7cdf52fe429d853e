"""The gate in front of Ray Serve's HTTP proxy: auth and size before the body, then the task key.

Why in the proxy: Ray Serve's proxy reads a request's whole body into its own queue as soon as the
request is routed, whoever sent it. The replica's `Gate` (app.py) would refuse an unauthenticated
client only after the proxy had taken its bytes. This ASGI middleware runs in the proxy before
that: a missing or wrong API key (every path but /health) is 401, a `Content-Length` over the
limit 413, and nothing of the body is read.

Then it sets the routing key that `TaskAffinityRouter` reads (the session header, which the proxy
turns into the request's session id): the task id from the `X-CUA-Task` header that the project's
client sends, or, for a client that does not send it, from the body (read bounded in size and time,
parsed, and replayed to the proxy unchanged). A session header sent by the client is dropped, so
only the task decides where a rollout goes. While the deployment is absent (deleted, not yet up)
Ray Serve answers 404 or 503 of its own; on the service's paths the gate answers the service's
typed 503 with `Retry-After` instead, as one process does while it shuts down. Every answer
carries `X-CUA-Gate: proxy`, by which `serve-reward` checks at start that the cluster's proxies run
this gate.

Ray Serve loads it from `RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH` (`proxy_middlewares`), in the
proxy's process; its settings come from the `CUA_SERVE_GATE` variable (JSON), set by `serve-reward`
for a local cluster and by the operator (`ray start`) on a cluster it joins.

The request head comes before any middleware, so its bounds (size, time, and the lingering close;
`protocol.py`) cannot be a middleware's: Ray Serve builds its proxy's `uvicorn.Config` without an
`http=` argument, so the callback makes uvicorn's default protocol ("auto"), in the proxy's process
only, the service's bounded one (`bound_proxy_http`), before the proxy's server starts.
"""
from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import quote

from .app import _error, _read_bounded, _replay, closing, header_refusal
from .body import BadBody, parse_json
from .config import DEFAULT_KEY_ENV
from .memory import IdleRelease, trim, tune_allocator

GATE_ENV = "CUA_SERVE_GATE"
CALLBACK_ENV = "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"
CALLBACK = "serving.reward_service.serve_gate:proxy_middlewares"
MARKER = (b"x-cua-gate", b"proxy")
TASK_HEADER = b"x-cua-task"
OPEN_PATHS = ("/health", "/ready", "/-/healthz")
SERVICE_PATHS = ("/health", "/ready", "/metrics", "/v1/verify", "/v1/verify/batch", "/v1/openrlhf")
REPLICA_HEADER = b"x-cua-replica"  # set by every replica (serve_app)
RETRY_AFTER_S = 5


def session_header() -> bytes:
    """The header Ray Serve's proxy reads as the session id (RAY_SERVE_SESSION_ID_HEADER_KEY)."""
    try:
        from ray.serve._private.constants import SERVE_SESSION_ID
    except ImportError:  # pragma: no cover - older Ray: the documented default
        SERVE_SESSION_ID = "x-session-id"
    return SERVE_SESSION_ID.lower().encode("latin-1")


def task_of_body(data: Any) -> str | None:
    """The task id of a /v1/verify or /v1/verify/batch body (a batch: its first rollout's)."""
    if not isinstance(data, dict):
        return None
    traj = data.get("trajectory")
    if traj is None and isinstance(data.get("trajectories"), list) and data["trajectories"]:
        traj = data["trajectories"][0]
    task = traj.get("task") if isinstance(traj, dict) else None
    tid = task.get("id") if isinstance(task, dict) else None
    return quote(str(tid), safe="") if tid not in (None, "") else None  # as the client sends it


class ProxyGate:
    """Pure ASGI middleware for Ray Serve's proxy (see the module docstring)."""

    def __init__(self, app: Any, *, api_key_env: str = DEFAULT_KEY_ENV, max_body_bytes: int = 64 * 2**20,
                 body_timeout_s: float = 60.0, lingers: bool = False) -> None:
        self.app, self.max_body_bytes, self.body_timeout_s = app, max_body_bytes, body_timeout_s
        self.lingers = lingers  # the proxy's protocol closes with a linger: refusals may close
        self.key = (os.environ.get(api_key_env) or "").strip() or None
        self.session = session_header()
        # The proxy holds every body it reads until a replica has fetched it, and glibc keeps the
        # freed pages: hand them back once no request has been in flight for a second.
        self.inflight = 0
        self.idle = IdleRelease(lambda: self.inflight, action=trim)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        self.inflight += 1
        try:
            await self._http(scope, receive, send)
        finally:
            self.inflight -= 1
            self.idle.ended()

    async def _http(self, scope: dict, receive: Any, send: Any) -> None:

        replaced = {"by_gate": False}

        async def marked(message: dict) -> None:
            if message["type"] == "http.response.start":
                if _ray_unavailable(message, scope.get("path", "")):  # ours instead, once
                    replaced["by_gate"] = True
                    return await _error(503, "shutting_down", "the reward service is not deployed here "
                                        "(stopping or starting)", {"Retry-After": str(RETRY_AFTER_S)})(
                                            scope, _replay(b""), marked_only)
                message = {**message, "headers": [*message.get("headers", []), MARKER]}
            elif replaced["by_gate"]:
                return None  # the body of Ray's own answer
            await send(message)

        async def marked_only(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), MARKER]}
            await send(message)

        headers = dict(scope["headers"])
        refusal = header_refusal(headers, self.key, open_path=scope.get("path", "") in OPEN_PATHS,
                                 max_body_bytes=self.max_body_bytes)
        if refusal is not None:
            refusal = closing(refusal, scope) if self.lingers else refusal
            return await refusal(scope, _replay(b""), marked)
        task = headers.get(TASK_HEADER, b"").decode("latin-1").strip() or None
        if task is None and scope.get("method") == "POST":
            body = await _read_bounded(receive, self.max_body_bytes, self.body_timeout_s)
            if not isinstance(body, bytes):  # too large / too slow: the replica's answer, here
                status, kind = (413, "too_large") if body == "too_large" else (408, "timeout")
                return await _error(status, kind, f"request body {kind.replace('_', ' ')}")(scope, _replay(b""), marked)
            try:
                task = task_of_body(parse_json(body))
            except BadBody:
                task = None  # the replica answers the 422
            receive = _replay_then(body, receive)
        kept = [(k, v) for k, v in scope["headers"] if k.lower() != self.session]
        if task is not None:
            kept.append((self.session, task.encode("latin-1", "replace")))
        await self.app({**scope, "headers": kept}, receive, marked)


def _ray_unavailable(start: dict, path: str) -> bool:
    """Ray Serve's own 404 (no route: the deployment is deleted or not yet up) or 503 (no replica)
    for one of the service's paths; the service's own answers carry `X-CUA-Replica`."""
    return (start["status"] in (404, 503) and path in SERVICE_PATHS
            and not any(k.lower() == REPLICA_HEADER for k, _ in start.get("headers", [])))


def _replay_then(body: bytes, receive: Any) -> Any:
    """The body read here, then the client's own messages: the proxy keeps listening for the
    client's disconnect after the body (a replay that answered `http.disconnect` next would make
    it cancel the request)."""
    replayed = {"done": False}

    async def again() -> dict:
        if replayed["done"]:
            return await receive()
        replayed["done"] = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


def gate_settings(api_key_env: str, max_body_bytes: int, body_timeout_s: float,
                  head: dict[str, float] | None = None) -> str:
    """$CUA_SERVE_GATE: the gate's options, and `head` (`bounded_protocol`'s; defaults if absent)."""
    return json.dumps({"api_key_env": api_key_env, "max_body_bytes": max_body_bytes,
                       "body_timeout_s": body_timeout_s, **({"head": head} if head else {})})


ProxyHttp: Any = None  # the proxy's bounded protocol class, once `bound_proxy_http` has run


def bound_proxy_http(head: dict[str, Any] | None = None) -> bool:
    """Make uvicorn's "auto" HTTP protocol, in this process, `protocol.BoundedHttpTools` with the
    bounds in `head` (`bounded_protocol`'s arguments; the service's defaults for those absent).
    False, and nothing changed, without httptools (uvicorn then runs h11, unbounded)."""
    global ProxyHttp
    try:
        import httptools  # noqa: F401 - the bounded protocol is httptools'
        from uvicorn import config as uvicorn_config

        from .protocol import BoundedHttpTools, bounded_protocol
    except ImportError:
        return False
    ProxyHttp = bounded_protocol(**{"max_head_bytes": BoundedHttpTools.max_head_bytes,
                                    "head_timeout_s": BoundedHttpTools.head_timeout_s,
                                    "linger_s": BoundedHttpTools.linger_s, **(head or {})})
    uvicorn_config.HTTP_PROTOCOLS["auto"] = f"{__name__}:ProxyHttp"
    return True


def proxy_middlewares() -> list[Any]:
    """Ray Serve's HTTP proxy callback: the middleware list (our gate, from $CUA_SERVE_GATE).
    Called once in each proxy's process, where it also sets the heap as the service's own
    (`memory.tune_allocator`): the proxy's bodies then come from arenas that `trim` can empty."""
    from starlette.middleware import Middleware

    tune_allocator()

    options = json.loads(os.environ.get(GATE_ENV) or "{}")
    lingers = bound_proxy_http(options.pop("head", None))
    return [Middleware(ProxyGate, **options, lingers=lingers)]
