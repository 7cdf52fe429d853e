"""The launched server itself, through the plain `openai` SDK: images, JSON schema, API key.

These pin the vLLM behaviour the judge client relies on (constrained decoding with the `guidance`
backend, base64 image parts really reaching the model, 401 on a wrong key), independently of our
own client code.
"""
from __future__ import annotations

import base64
import io
import json

import openai
import pytest
from PIL import Image

pytestmark = pytest.mark.engine

SCHEMA = {
    "type": "object",
    "properties": {
        "success": {"type": "boolean"},
        "reason": {"type": "string", "maxLength": 60},
        "score": {"type": "integer", "minimum": 0, "maximum": 10},
        "category": {"type": "string", "enum": ["navigation", "input", "other"]},
    },
    "required": ["success", "reason", "score", "category"],
    "additionalProperties": False,
}


def _data_url(size: tuple[int, int], color: tuple[int, int, int]) -> str:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _chat(client: openai.OpenAI, model: str, images: list[str]):
    content = [{"type": "text", "text": "Did the agent succeed? Answer in JSON."}]
    content += [{"type": "image_url", "image_url": {"url": url}} for url in images]
    return client.chat.completions.create(
        model=model, temperature=0, max_tokens=256, messages=[{"role": "user", "content": content}],
        response_format={"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True}})


def _check(reply: dict) -> None:
    assert set(reply) == {"success", "reason", "score", "category"}
    assert isinstance(reply["success"], bool)
    assert isinstance(reply["reason"], str) and len(reply["reason"]) <= 60
    assert isinstance(reply["score"], int) and 0 <= reply["score"] <= 10
    assert reply["category"] in {"navigation", "input", "other"}


def test_schema_constrained_reply_with_image(engine):
    client = openai.OpenAI(base_url=engine.base_url, api_key=engine.api_key, max_retries=0)
    text_only = _chat(client, engine.model, [])
    one_image = _chat(client, engine.model, [_data_url((320, 200), (200, 30, 30))])
    for r in (text_only, one_image):
        assert r.choices[0].finish_reason == "stop"
        # xgrammar/guidance may emit raw control characters inside strings: parse leniently.
        _check(json.loads(r.choices[0].message.content, strict=False))
    # The image really reached the model: it costs prompt tokens (tiny model: up to 64 per image).
    assert one_image.usage.prompt_tokens - text_only.usage.prompt_tokens >= 8


def test_several_images_cost_tokens_per_image(engine):
    client = openai.OpenAI(base_url=engine.base_url, api_key=engine.api_key, max_retries=0)
    one = _chat(client, engine.model, [_data_url((224, 224), (0, 0, 255))])
    three = _chat(client, engine.model, [_data_url((224, 224), c) for c in [(0, 0, 255), (0, 255, 0), (9, 9, 9)]])
    per_image = three.usage.prompt_tokens - one.usage.prompt_tokens
    assert per_image >= 2 * 8, (one.usage, three.usage)
    _check(json.loads(three.choices[0].message.content, strict=False))


def test_wrong_api_key_is_rejected(engine):
    client = openai.OpenAI(base_url=engine.base_url, api_key="not-the-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as exc:
        client.models.list()
    assert exc.value.status_code == 401
    good = openai.OpenAI(base_url=engine.base_url, api_key=engine.api_key, max_retries=0)
    assert [m.id for m in good.models.list().data] == [engine.model]
