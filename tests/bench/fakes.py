"""A tiny scripted judge implementing the Judge protocol (no network), for baseline tests."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from verifier.errors import JudgeError, JudgeInvalidOutputError
from verifier.judge.base import ImagePart, Message, Reply, TextPart, Usage


class FakeJudge:
    """Answers each stage with `script[stage](messages, output_model)` (a dict, a model, or raises)."""

    def __init__(self, script: dict[str, Callable[[list[Message], type], Any]]) -> None:
        self.script = script
        self.requests: list[tuple[str, list[Message], type]] = []

    async def complete(self, messages, output_model, *, stage, sampling=None):
        self.requests.append((stage, messages, output_model))
        if stage not in self.script:
            raise JudgeInvalidOutputError("no script for stage", stage=stage)
        out = self.script[stage](messages, output_model)
        if isinstance(out, BaseException):
            raise out
        parsed = out if isinstance(out, output_model) else output_model.model_validate(out)
        return Reply[output_model](parsed=parsed, usage=Usage(prompt_tokens=100, completion_tokens=10,
                                                              latency_s=0.01, attempts=1), model="fake-judge")

    async def aclose(self) -> None:
        pass

    def stages(self) -> list[str]:
        return [s for s, _, _ in self.requests]


def text_of(messages: list[Message]) -> str:
    return "\n".join(p.text for m in messages for p in m.content if isinstance(p, TextPart))


def images_of(messages: list[Message]) -> list[str]:
    return [p.label or "" for m in messages for p in m.content if isinstance(p, ImagePart)]


def fail(stage: str) -> JudgeError:
    return JudgeInvalidOutputError("scripted failure", stage=stage)
