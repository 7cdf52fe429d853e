"""Protocol messages -> OpenAI chat-completions messages: the one wire format of every backend.

The HTTP judge and the in-process vLLM judge both send exactly this, so a prompt behaves the same
whichever backend serves it (and a cached reply key means the same thing).
"""
from __future__ import annotations

from typing import Any

from .base import Message
from .images import ImageEncoder


def render_chat(messages: list[Message], encoder: ImageEncoder, *,
                image_uuid: bool = False) -> list[dict[str, Any]]:
    """Render messages; images become data URLs (encoded once per content hash by `encoder`).

    System and assistant content is sent as plain text (accepted by every server); images are only
    allowed in user messages, each preceded by its label as a text part. With `image_uuid`, vLLM's
    per-item `uuid` (the image hash) lets its media cache recognise a screenshot across requests.
    """
    out: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role != "user":
            if any(p.type == "image" for p in msg.content):
                raise ValueError(f"images belong in user messages, not in a {msg.role} message")
            out.append({"role": msg.role,
                        "content": "\n\n".join(p.text for p in msg.content if p.type == "text")})
            continue
        parts: list[dict[str, Any]] = []
        for part in msg.content:
            if part.type == "text":
                parts.append({"type": "text", "text": part.text})
                continue
            if part.label:
                parts.append({"type": "text", "text": part.label})
            image = encoder.encode(part.screenshot)
            item: dict[str, Any] = {"type": "image_url", "image_url": {"url": image.data_url}}
            if image_uuid:
                item["uuid"] = image.sha256
            parts.append(item)
        out.append({"role": "user", "content": parts})
    return out
