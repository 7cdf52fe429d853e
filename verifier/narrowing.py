"""Per-call output models: a stage's schema narrowed to the criterion ids and screenshots of one call.

Why: with `criterion_id` / `screenshot` as JSON-schema enums, every list exactly as long as the
call's ids and entry k pinned to the k-th id (`prefixItems`, see `judge.schema.ONE_EACH`),
constrained decoding cannot invent an id, skip one or repeat one, and a plain-JSON
backend gets a precise validation error to re-ask with. The built class carries `expected_ids` /
`expected_screenshots`, which `verifier.testing.ScriptedJudge` reads to answer. Built classes are
memoised (`lru_cache`), so a group of rollouts sends byte-identical schemas.

Cost: building a pydantic class takes ~0.6 ms, and every relevance call of a single trajectory has
its own screenshot numbers (a new key). The per-item classes depend on the criterion ids alone, so
they are built once per rubric (`_item_for`) and shared by every call's row and batch classes.
Deriving a call's JSON schema from pydantic took another ~1 ms; a relevance call's schema differs
from that of any other call of the same rubric and batch length only in its screenshot numbers, so
it is the per-(rubric, length) template's schema with those numbers put in (`_relevance_schema`,
tested byte-equal to pydantic's path) and rides on the class as ``wire_schema``.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from pydantic import Field, create_model, model_validator

from .judge.schema import ONE_EACH, model_schema
from .schemas import (
    ActionScore,
    ActionScores,
    ConditionDecision,
    ConditionItem,
    EvidenceBatch,
    EvidenceItem,
    RealityCheck,
    RealityNote,
    RelevanceBatch,
    RelevanceRow,
    RelevanceScore,
    RescoreItem,
    Rescoring,
    _Out,
)


def _check(items: list, key: str, expected: tuple) -> None:
    got = [getattr(i, key) for i in items]
    if sorted(got, key=str) != sorted(expected, key=str):
        raise ValueError(f"need exactly one entry per {key} in {list(expected)}; got {got}")


def _each(key: str, values: tuple) -> Any:
    """A list of exactly one entry per value of `key`; the emitted schema pins entry k to the k-th
    value (`ONE_EACH`), so constrained decoding cannot repeat one."""
    return Field(min_length=len(values), max_length=len(values), json_schema_extra={ONE_EACH: key})


@lru_cache(maxsize=128)
def _item_for(item_base: type[_Out], ids: tuple[str, ...]) -> type[_Out]:
    """`item_base` with ``criterion_id`` narrowed to `ids` (a rubric's items: one class per rubric)."""
    return create_model(item_base.__name__ + "For", __base__=item_base,
                        criterion_id=(Literal[ids], ...))  # type: ignore[valid-type]


#: Built per-call classes kept. Criterion ids are ``c1..cN``, so a relevance class (ids, screenshot
#: number) recurs in every trajectory with N criteria: a trainer whose rubrics have 3-12 criteria
#: and whose trajectories reach 100 screenshots needs ~1000 of them, plus the other stages'. At
#: ~25 KiB a class this is at most ~50 MiB; 512 made such a run rebuild them (1.4 ms each, on the
#: critical path of the relevance fan-out).
FOR_CALL_CACHE = 2048


@lru_cache(maxsize=FOR_CALL_CACHE)
def for_call(base: type[_Out], ids: tuple[str, ...], screenshots: tuple[int, ...] = ()) -> type[_Out]:
    """`base` narrowed to one call: criterion ids (and screenshot numbers) as enums, each exactly once."""
    model = _build(base, ids, screenshots)
    if base is RelevanceBatch and screenshots and len(set(screenshots)) == len(screenshots):
        model.wire_schema = _relevance_schema(_relevance_template(ids, len(screenshots)), screenshots)
    return model


@lru_cache(maxsize=64)
def _relevance_template(ids: tuple[str, ...], k: int) -> dict[str, Any]:
    """The schema of a relevance call of this rubric for screenshots 1..k (pydantic's path)."""
    return model_schema(_build(RelevanceBatch, ids, tuple(range(1, k + 1))))


def _relevance_schema(template: dict[str, Any], screenshots: tuple[int, ...]) -> dict[str, Any]:
    """`template` with its screenshot numbers replaced by `screenshots` (in order: the enum of every
    row, ``const`` for a single one, and row k of ``prefixItems`` pinned to the k-th). Only the
    dicts on the way to a screenshot are copied; key order (hence the request bytes) is kept."""
    def pin(row: dict[str, Any], values: tuple[int, ...]) -> dict[str, Any]:
        shot = dict(row["properties"]["screenshot"])
        if "enum" in shot:
            shot["enum"] = list(values)
        else:
            shot["const"] = values[0]
        return {**row, "properties": {**row["properties"], "screenshot": shot}}
    rows = {**template["properties"]["rows"]}
    rows["items"] = pin(rows["items"], screenshots)
    if "prefixItems" in rows:
        rows["prefixItems"] = [pin(row, (n,)) for row, n in zip(rows["prefixItems"], screenshots)]
    return {**template, "properties": {**template["properties"], "rows": rows}}


def _build(base: type[_Out], ids: tuple[str, ...], screenshots: tuple[int, ...]) -> type[_Out]:
    if base is RelevanceBatch:
        score: Any = _item_for(RelevanceScore, ids)  # a class built at run time (not a static type)
        row = create_model("RelevanceRowFor", __base__=RelevanceRow,
                           screenshot=(Literal[screenshots], ...),  # type: ignore[valid-type]
                           scores=(list[score], _each("criterion_id", ids)))

        def _v(self):
            _check(self.rows, "screenshot", screenshots)
            for r in self.rows:
                _check(r.scores, "criterion_id", ids)
            return self
        fields = {"rows": (list[row], _each("screenshot", screenshots))}
    else:
        item_base = {EvidenceBatch: EvidenceItem, ConditionDecision: ConditionItem,
                     ActionScores: ActionScore, Rescoring: RescoreItem, RealityCheck: RealityNote}[base]
        item: Any = _item_for(item_base, ids)
        key = "notes" if base is RealityCheck else "items"

        def _v(self):
            _check(getattr(self, key), "criterion_id", ids)
            return self
        fields = {key: (list[item], _each("criterion_id", ids))}
    model = create_model(base.__name__ + "For", __base__=base,
                         __validators__={"_complete": model_validator(mode="after")(_v)}, **fields)
    model.expected_ids, model.expected_screenshots = ids, screenshots
    return model
