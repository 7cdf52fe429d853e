"""Helpers around `verifier.testing.ScriptedJudge` for the bench tests."""
from __future__ import annotations

from verifier.errors import JudgeError, JudgeInvalidOutputError
from verifier.judge.base import ImagePart, Message, TextPart


def text_of(messages: list[Message]) -> str:
    return "\n".join(p.text for m in messages for p in m.content if isinstance(p, TextPart))


def images_of(messages: list[Message]) -> list[str]:
    return [p.label or "" for m in messages for p in m.content if isinstance(p, ImagePart)]


def fail(stage: str) -> JudgeError:
    return JudgeInvalidOutputError("scripted failure", stage=stage)
