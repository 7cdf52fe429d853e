"""The service's OpenAPI schema, with the request bodies the routes parse by hand.

Why by hand: the routes read their bodies with `body.read_model` (one copy, parsed from bytes, data
URLs lifted; see body.py), not as FastAPI body parameters, so FastAPI's generated schema had no
request body for them, and the schema was switched off altogether: `/v1/verify` had none, though its
pydantic models exist (issue 38 §8). Here the generated schema (paths, answers) gets each route's
request model as its `requestBody`, and `/openapi.json` serves it (behind the API key, like every
route but /health and /ready).
"""
from __future__ import annotations

from typing import Any

from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from .models import BatchRequest, ErrorBody, OpenRLHFRequest, VerifyRequest

BODIES: dict[str, type[BaseModel]] = {"/v1/verify": VerifyRequest, "/v1/verify/batch": BatchRequest,
                                      "/v1/openrlhf": OpenRLHFRequest}
REF = "#/components/schemas/{model}"


def answers(ok: Any = None) -> dict[int | str, dict[str, Any]]:
    """A route's documented answers: `ok` for 200 (a model), the error body for the rest."""
    err = {"model": ErrorBody}
    out: dict[int | str, dict[str, Any]] = {
        401: {**err, "description": "missing or wrong API key"},
        413: {**err, "description": "body (or batch) over the limits"},
        422: {**err, "description": "not the route's schema, or a bad trajectory"},
        429: {**err, "description": "queue or byte budget full (Retry-After)"},
        503: {**err, "description": "shutting down, or the judge is down (Retry-After)"}}
    if ok is not None:
        out[200] = {"model": ok, "description": "the answer"}
    return out


def install(app: Any, version: str) -> None:
    """Serve the schema at `/openapi.json`, built once on first use."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=version, routes=app.routes,
                             description="cua-verifier reward service (docs/scaling.md)")
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for path, model in BODIES.items():
            body = model.model_json_schema(ref_template=REF)
            components.update(body.pop("$defs", {}))
            components[model.__name__] = body
            schema["paths"][path]["post"]["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": REF.format(model=model.__name__)}}}}
        app.openapi_schema = schema
        return schema

    app.openapi = openapi
