"""`cua-verifier serve-reward`: the verifier as one HTTP service shared by every training rank.

Why a service: TRL spreads the G rollouts of one prompt over ranks, and each process has its own
stage cache, so every rank would write its own rubric for the same task. One service process holds
one `VerifierSession` (one stage cache, one single-flight table, one judge client), so a task's
rubric is generated once for all ranks, and identical rollouts are verified once.

Modules: `config` (settings, the loopback/API-key rule), `models` (the wire schema), `openapi` (its
schema, served), `queue` (bounded admission, 429 + Retry-After), `budget` (admission by bytes),
`metrics` (Prometheus), `readiness` (/ready: a cached probe of the judge), `core` (parse + verify
with a deadline), `app` (FastAPI routes, auth, body limit), `protocol` (uvicorn's HTTP protocol with
a bounded request head and a lingering close), `server` (uvicorn with a draining shutdown), `cli`
(the subcommand). The benchmark harness lives in `serving/perf`, not here. On Ray Serve (`--replicas N`, `--ray ADDRESS`): `serve_run` (start, rescale,
stop), `serve_app` (one replica), `serve_gate` (auth and the task key, in Ray Serve's proxy),
`affinity` (the request router: a task's rollouts on one replica).
"""
from __future__ import annotations

from .config import ServiceConfig

__all__ = ["ServiceConfig"]
