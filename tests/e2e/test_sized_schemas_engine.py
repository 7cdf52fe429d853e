"""Every stage's schema at the issue-19 bounds, sent to the real vLLM server.

The contract grew to fit real judges (verifier/limits.py): 18 criteria, 2,400-character
descriptions, 49 half-point values, 60 failure points. A server that rejects a schema fails every
call of that stage, so each stage's real schema (the base models, and the per-call models narrowed
to 9 criteria, the real maximum, and to 18, the bound) is sent here as a real request. vLLM 0.32
picks the structured-outputs backend per server, not per request: this server runs the engine
tier's backend (`guidance`, what `serve-judge` starts by default). The other backends vLLM offers
(xgrammar, which `serve-judge --structured-outputs-backend` can select, outlines,
lm-format-enforcer) compile the same schemas with vLLM's own request validators in
tests/judge/test_schema_backends.py (`engine_utils.sized_schemas`), which keeps the tier to one server start.

Replies are cut at a few tokens: acceptance and grammar compilation are what is tested, not the
random-weight model's text.
"""
from __future__ import annotations

import asyncio

import openai
import pytest
from engine_utils.sized_schemas import sized_models

from verifier import schemas
from verifier.judge.schema import json_schema_for, schema_name

pytestmark = pytest.mark.engine

BASE = (schemas.RubricDraft, schemas.Outcome, schemas.SideEffects, schemas.FailureReport, schemas.TaskValidity)


def stage_schemas() -> dict[str, dict]:
    models = {m.__name__: m for m in BASE} | sized_models()
    return {name: json_schema_for(model) for name, model in models.items()}


async def _send(client: openai.AsyncOpenAI, model: str, name: str, schema: dict):
    return await client.chat.completions.create(
        model=model, temperature=0, max_tokens=16, seed=0,
        messages=[{"role": "user", "content": f"Reply with the JSON object for {name}."}],
        response_format={"type": "json_schema", "json_schema": {"name": schema_name_of(name), "schema": schema,
                                                                "strict": True}})


def schema_name_of(name: str) -> str:
    return name.replace(":", "_")


async def test_every_stage_schema_at_the_new_bounds_is_accepted(engine):
    sent = stage_schemas()
    assert len(sent) == len(BASE) + 12  # 6 per-call stages at 9 and at 18 criteria
    assert schema_name(schemas.RubricDraft) == "RubricDraft"
    client = openai.AsyncOpenAI(base_url=engine.base_url, api_key=engine.api_key, max_retries=0, timeout=120)
    try:
        replies = await asyncio.gather(*(_send(client, engine.model, n, s) for n, s in sent.items()),
                                       return_exceptions=True)
    finally:
        await client.close()
    rejected = {n: f"{type(r).__name__}: {r}"[:300] for n, r in zip(sent, replies) if isinstance(r, BaseException)}
    assert rejected == {}
    for name, reply in zip(sent, replies):
        choice = reply.choices[0]  # type: ignore[union-attr]
        assert choice.finish_reason in ("length", "stop"), name
        assert (choice.message.content or "").lstrip().startswith("{"), name  # the grammar was applied
