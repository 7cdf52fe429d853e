"""The schema-echo judge under its documented name: ``python -m reward.echo_judge --port 8011``.

The server itself is `verifier.testing.echo_judge`: a test double that the rewards' smoke tests and
the HTTP benchmark's latency judge (`verifier.perf.latency_judge`) both build on, so it sits below
both of them. This module re-exports it and keeps the command working.
"""
from __future__ import annotations

from verifier.testing.echo_judge import (
    FILLER,
    MAX_BODY_BYTES,
    READ_TIMEOUT_S,
    EchoJudgeServer,
    echo_reply,
    main,
    minimal_instance,
    serve_until_interrupted,
)

__all__ = ["FILLER", "MAX_BODY_BYTES", "READ_TIMEOUT_S", "EchoJudgeServer", "echo_reply", "main", "minimal_instance",
           "serve_until_interrupted"]

if __name__ == "__main__":
    raise SystemExit(main())
