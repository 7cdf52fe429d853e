"""Protocol messages -> OpenAI chat-completions messages: the one wire format of every backend.

The HTTP judge and the in-process vLLM judge both send exactly this, so a prompt behaves the same
whichever backend serves it (and a cached reply key means the same thing). The only difference is
how an image travels: a URL (``data:`` or ``file://``, see `images`) over HTTP, or the decoded
PIL image itself in process (``image_pil``: nothing is encoded at all).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..trajectory import Screenshot
from .base import Message
from .images import ImageEncoder

#: Renders one screenshot as a content part (without the label).
ImageRenderer = Callable[[Screenshot], dict[str, Any]]


def url_part(encoder: ImageEncoder, *, image_uuid: bool = False) -> ImageRenderer:
    """Images as ``image_url`` parts (encoded once per content hash by `encoder`). With
    `image_uuid`, vLLM's per-item ``uuid`` is the hash of the bytes sent, so its media cache
    recognises a screenshot across requests and never confuses two encodings of one page."""
    def render(shot: Screenshot) -> dict[str, Any]:
        image = encoder.encode(shot)
        item: dict[str, Any] = {"type": "image_url", "image_url": {"url": image.url}}
        if image_uuid:
            item["uuid"] = image.sha256
        return item
    return render


def render_chat(messages: list[Message], encoder: ImageEncoder | None = None, *,
                image_uuid: bool = False, image: ImageRenderer | None = None,
                coarse: ImageRenderer | None = None) -> list[dict[str, Any]]:
    """Render messages; each image goes through `image` (default: `url_part(encoder)`), an image
    part of ``detail="coarse"`` through `coarse` when given.

    System and assistant content is sent as plain text (accepted by every server); images are only
    allowed in user messages, each preceded by its label as a text part.
    """
    if image is None:
        if encoder is None:
            raise ValueError("render_chat needs an encoder or an image renderer")
        image = url_part(encoder, image_uuid=image_uuid)
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
            render = coarse if coarse is not None and part.detail == "coarse" else image
            parts.append(render(part.screenshot))
        out.append({"role": "user", "content": parts})
    return out
