"""The FastAPI application: routes, API-key check, body-size limit and per-request metrics.

Routes: `GET /health` (liveness, open), `GET /ready` (readiness: the judge answers; open), `GET /metrics`
(Prometheus text), `POST /v1/verify` (one trajectory -> its VerificationResult), `POST /v1/verify/batch` (one ItemResult per trajectory),
`POST /v1/openrlhf` (OpenRLHF's remote reward-model body -> `{"rewards", "scores", "extra_logs"}`).
"""
from __future__ import annotations

import asyncio
import hmac
import math
import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from verifier import __version__
from verifier.errors import CuaVerifierError
from verifier.result import VerificationResult
from verifier.settings import RewardSettings

from . import openapi
from .body import BadBody, read_model
from .budget import ByteAdmission
from .config import ServiceConfig
from .core import Refused, RewardService
from .inline import DecodedImages
from .models import BatchRequest, BatchResponse, ErrorBody, ErrorDetail, OpenRLHFRequest, VerifyRequest
from .readiness import ready_answer

OPEN_PATHS = frozenset({"/health", "/ready"})  # answered without the API key


def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    body = ErrorBody(error=ErrorDetail(type=kind, message=message)).model_dump()
    return JSONResponse(body, status_code=status, headers=headers)


def _refused(exc: Refused) -> JSONResponse:
    kind = "queue_full" if exc.status == 429 else "shutting_down"
    return _error(exc.status, kind, str(exc), {"Retry-After": str(exc.retry_after)})


class Gate:
    """Pure ASGI, outermost, so nothing is read from an unauthenticated client: first the API key
    (every path but /health and /ready: 401), then a `Content-Length` over the limit (413), both before a byte
    of the body is read. Then `app` (byte admission, then `BodyReader`) runs. Also counts every
    request and its latency, labelled by route: a path that is no route is `other`, so an
    unauthenticated client cannot add series to /metrics (each new label set was one more series
    for ever: 20,000 random paths made a 31 MB /metrics, issue 38 §1)."""

    def __init__(self, app: Any, service: RewardService, key: str | None, routes: frozenset[str]) -> None:
        self.app, self.service, self.key, self.routes = app, service, key, routes

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        cfg = self.service.config
        path, t0, status = scope.get("path", ""), time.perf_counter(), {"code": 500}
        endpoint = path if path in self.routes else "other"

        async def counted_send(message: dict) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        refusal = header_refusal(dict(scope["headers"]), self.key, open_path=path in OPEN_PATHS,
                                 max_body_bytes=cfg.max_body_bytes)
        if refusal is None:
            await self.app(scope, receive, counted_send)
        else:  # the body (if any) is never read, and the connection is closed (protocol.py lingers)
            await closing(refusal, scope)(scope, _replay(b""), counted_send)
        m = self.service.metrics
        m.requests.labels(endpoint=endpoint, status=str(status["code"])).inc()
        m.latency.labels(endpoint=endpoint).observe(time.perf_counter() - t0)


class BodyReader:
    """Pure ASGI, behind byte admission: reads the body bounded in its *total* size (413 as soon as it
    passes the limit, however it is chunked) and in time (408 when it has not all arrived within
    `body_timeout_s`: a stalled upload holds no connection for long), then replays it to the app."""

    def __init__(self, app: Any, service: RewardService) -> None:
        self.app, self.service = app, service

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        cfg = self.service.config
        body = await _read_bounded(receive, cfg.max_body_bytes, cfg.body_timeout_s, joined=False)
        if isinstance(body, list):  # replayed as it came: the parser reads it without a join
            return await self.app(scope, _replay(body), send)
        if body == "too_large":
            refusal = closing(_error(413, "too_large", f"request body over {cfg.max_body_bytes} bytes"), scope)
        else:
            refusal = _error(408, "timeout", f"request body not received within {cfg.body_timeout_s:g}s",
                             {"Connection": "close"})
        await refusal(scope, _replay(b""), send)


def closing(refusal: JSONResponse, scope: dict) -> JSONResponse:
    """`refusal`, with `Connection: close` when the request has a body it leaves unread: keeping the
    connection would mean reading (and parsing) all of that body, whatever its declared size, for a
    client that was refused (issue 38 §8). The server's protocol answers, then lingers (protocol.py)."""
    if any(k == b"transfer-encoding" or (k == b"content-length" and v.strip() not in (b"", b"0"))
           for k, v in scope["headers"]):
        refusal.headers["connection"] = "close"
    return refusal


def header_refusal(headers: dict[bytes, bytes], key: str | None, *, open_path: bool,
                   max_body_bytes: int) -> JSONResponse | None:
    """What the headers alone refuse, before a byte of the body is read: a missing or wrong key
    (401; open paths need none), then a declared `Content-Length` over the limit (413). Shared by
    the single-process gate and the one in Ray Serve's proxy, so both refuse alike."""
    if not open_path and not _key_matches(headers, key):
        return _error(401, "unauthorised", "invalid or missing API key", {"WWW-Authenticate": "Bearer"})
    try:
        length = int(headers[b"content-length"]) if b"content-length" in headers else None
    except ValueError:
        length = None
    if length is not None and length > max_body_bytes:
        return _error(413, "too_large", f"request body over {max_body_bytes} bytes")
    return None


def _key_matches(headers: dict[bytes, bytes], key: str | None) -> bool:
    if key is None:
        return True
    given = headers.get(b"authorization", b"").decode("latin-1").removeprefix("Bearer ").strip()
    given = given or headers.get(b"x-api-key", b"").decode("latin-1").strip()
    return hmac.compare_digest(given.encode(), key.encode())


async def _read_bounded(receive: Any, limit: int, timeout_s: float, *, joined: bool = True) -> bytes | list[bytes] | str:
    """The whole body (joined, or the list of its chunks), or "too_large" as soon as its total
    passes `limit`, or "timeout" when it has not all arrived within `timeout_s`.

    One timeout around the whole read, not one per message: ``wait_for`` starts a task per call,
    and a 41 MB body arrives in hundreds of messages (~5% of the service's CPU per verification)."""
    try:
        chunks = await asyncio.wait_for(_read_all(receive, limit), timeout=timeout_s)
    except TimeoutError:
        return "timeout"
    if isinstance(chunks, str) or not joined:
        return chunks
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def _read_all(receive: Any, limit: int) -> list[bytes] | str:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return chunks
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return "too_large"
        if chunk:
            chunks.append(chunk)
        if not message.get("more_body"):
            return chunks


def _replay(body: bytes | list[bytes]) -> Any:
    """An ASGI receive that gives `body` (one message, or one per chunk), then a disconnect."""
    messages = [body] if isinstance(body, bytes) else body or [b""]
    sent = {"next": 0}

    async def receive() -> dict:
        k = sent["next"]
        if k >= len(messages):
            return {"type": "http.disconnect"}
        sent["next"] = k + 1
        return {"type": "http.request", "body": messages[k], "more_body": k + 1 < len(messages)}

    return receive


def local_health(service: RewardService) -> dict[str, Any]:
    """This process's (or replica's) /health fields."""
    q, b = service.queue, service.budget
    return {"status": "draining" if service.draining else "ok", "queue_depth": q.depth,
            "queue_capacity": q.capacity, "queue_high_water": q.high_water,
            "bytes_in_flight": b.in_flight, "bytes_capacity": b.capacity,
            "bytes_high_water": b.high_water, "pipeline_runs": service.session.runs,
            **({"replica": service.replica} if service.replica else {})}


def create_app(settings: RewardSettings, config: ServiceConfig, service: RewardService | None = None) -> Any:
    """The ASGI app (wrapped in the body limit). `app.state.service` is the shared service."""
    service = service or RewardService(settings, config)
    key = config.api_key()
    app = FastAPI(title="cua-verifier reward service", docs_url=None, redoc_url=None, openapi_url="/openapi.json")
    openapi.install(app, __version__)
    app.state.service = service

    @app.exception_handler(BadBody)
    async def _bad_body(_request: Request, exc: BadBody) -> JSONResponse:
        return _error(422, "invalid_request", str(exc))

    @app.exception_handler(Refused)
    async def _refused_handler(_request: Request, exc: Refused) -> JSONResponse:
        return _refused(exc)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        own = local_health(service)
        return await service.board.health(own) if service.board else own  # Ray Serve: the deployment's

    @app.get("/ready")
    async def ready() -> JSONResponse:
        """Readiness: 503 while the judge does not answer (a cached probe) or the service drains."""
        status, body = await ready_answer(service)
        return JSONResponse(body, status_code=status, headers={"Retry-After": "5"} if status == 503 else None)

    @app.get("/metrics")
    async def metrics() -> Response:
        own = generate_latest(service.metrics.registry)
        text = await service.board.metrics(own) if service.board else own
        return Response(text, media_type=CONTENT_TYPE_LATEST)

    @app.post("/v1/verify", responses=openapi.answers(VerificationResult))
    async def verify(request: Request) -> Any:
        decoded = DecodedImages()
        body = await read_model(request, VerifyRequest, decoded)
        given: dict[str, Any] = {"rubrics": [body.rubric]} if body.rubric is not None else {}  # docs/rubrics.md
        (item,) = await service.verify_records([body.trajectory], body.deadline_s, decoded, **given)
        if item.status == "scored":
            return JSONResponse(item.result)
        return _error(item.http_status, item.error_type or "error", item.reason or "",
                      {"Retry-After": str(item.retry_after)} if item.retry_after else None)

    @app.post("/v1/verify/batch", responses=openapi.answers(BatchResponse))
    async def verify_batch(request: Request) -> Any:
        decoded = DecodedImages()
        body = await read_model(request, BatchRequest, decoded)
        if len(body.trajectories) > min(config.max_batch, config.queue_size):
            return _error(413, "too_large", f"batch of {len(body.trajectories)} over --max-batch "
                          f"{config.max_batch} / --queue-size {config.queue_size}")
        given_all: dict[str, Any] = {"rubrics": body.rubrics} if body.rubrics is not None else {}
        items = await service.verify_records(body.trajectories, body.deadline_s, decoded, **given_all)
        return BatchResponse(results=items).model_dump()

    @app.post("/v1/openrlhf", responses=openapi.answers())
    async def openrlhf(request: Request, reward: str = "combined", on_failure: str | None = None,
                       require_screenshots: bool = False) -> Any:
        """OpenRLHF's remote-RM body; `?reward=combined|process|outcome&on_failure=mean|error|<number>`
        (mean by default: an unscored row gets its group's mean, see reward.unscored_fill). Bad
        input is 422, which OpenRLHF does not retry; a batch with no row scored is 503 (retried)."""
        body = await read_model(request, OpenRLHFRequest)
        from reward.openrlhf import (
            DEFAULT_ON_FAILURE,
            records_from_request,
            rewards_from_items,
            rubrics_from_labels,
            ungrounded,
        )
        from reward.unscored_fill import row_groups

        if len(body.query) > min(config.max_batch, config.queue_size):
            return _error(413, "too_large", f"batch of {len(body.query)} over --max-batch {config.max_batch}")
        records = records_from_request(body.query, body.prompts, body.labels)
        if require_screenshots or settings.require_screenshots:
            records = [ungrounded(r) for r in records]
        good = [r for r in records if isinstance(r, dict)]
        labelled = rubrics_from_labels(body.labels, len(records))  # a label's rubric (docs/rubrics.md)
        given: dict[str, Any] = (
            {"rubrics": [g for g, r in zip(labelled, records, strict=True) if isinstance(r, dict)]} if labelled else {})
        scored = iter(await service.verify_records(good, None, **given) if good else [])
        items = [(next(scored) if isinstance(r, dict) else service.answer_error(r)).model_dump() for r in records]
        try:
            return rewards_from_items(items, kind=reward, on_failure=on_failure or DEFAULT_ON_FAILURE,
                                      none_if_degraded=settings.none_if_degraded,
                                      weight=settings.combined_process_weight,
                                      groups=row_groups(body.prompts, body.labels, records))
        except CuaVerifierError as exc:  # RemoteError: unscored under on_failure=error, or none scored
            wait = getattr(exc, "retry_after", None)
            return _error(getattr(exc, "status", None) or 502, getattr(exc, "error_type", "Unscored"),
                          getattr(exc, "message", str(exc)), {"Retry-After": str(math.ceil(wait))} if wait else None)
        except ValueError as exc:
            return _error(422, "invalid_request", str(exc))

    inner = BodyReader(app, service)
    routes = frozenset(getattr(r, "path", "") for r in app.routes)  # the templates: every route is static
    return Gate(ByteAdmission(inner, service.budget, chunked_bytes=config.max_body_bytes,
                              on_reject=_over_budget(service)), service, key, routes)


def _over_budget(service: RewardService) -> Any:
    async def answer(scope: dict, receive: Any, send: Any, retry_after: int) -> None:
        service.metrics.rejected.labels(reason="bytes_in_flight").inc()
        b = service.budget
        await closing(_error(429, "queue_full", f"bytes in flight at the --max-inflight-mb bound ({b.in_flight} "
                             f"of {b.capacity})", {"Retry-After": str(retry_after)}), scope)(scope, receive, send)
    return answer
