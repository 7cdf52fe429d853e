"""Per-call output models at the sizes issue 19 fixed: the real maximum (9 criteria) and the bound.

Shared by the backend validators test (tests/judge/test_schema_backends.py) and the real-server
test (tests/e2e/test_sized_schemas_engine.py), so both send the same schemas.
"""
from __future__ import annotations

from pydantic import BaseModel

from verifier import schemas
from verifier.limits import MAX_CRITERIA, MAX_RELEVANCE_BATCH
from verifier.narrowing import for_call

#: Criteria per call: the largest real rubric (9) and the contract's bound.
SIZES = (9, MAX_CRITERIA)


def sized_models() -> dict[str, type[BaseModel]]:
    """name -> each stage's per-call model for 9 criteria and for `MAX_CRITERIA` criteria."""
    out: dict[str, type[BaseModel]] = {}
    for n in SIZES:
        ids = tuple(f"c{i}" for i in range(1, n + 1))
        for base in (schemas.EvidenceBatch, schemas.ConditionDecision, schemas.ActionScores, schemas.Rescoring,
                     schemas.RealityCheck):
            out[f"sized{n}:{base.__name__}"] = for_call(base, ids)
        out[f"sized{n}:RelevanceBatch"] = for_call(schemas.RelevanceBatch, ids, tuple(range(1, MAX_RELEVANCE_BATCH + 1)))
    return out
