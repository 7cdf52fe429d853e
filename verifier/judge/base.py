"""The judge protocol: chat messages (text + images) in, a parsed pydantic object plus usage out.

Every stage, baseline and reward talks to a judge only through `Judge.complete`. There is one
real implementation (`verifier.judge.openai_compat.OpenAICompatJudge`, covering `vllm serve` and
remote providers) and test doubles in `verifier.testing`.
"""
from __future__ import annotations

from typing import Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..trajectory import Screenshot

T = TypeVar("T", bound=BaseModel)


class TextPart(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ImagePart(BaseModel):
    """An image to show the judge. The backend downsizes and encodes it (once per content hash)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    type: Literal["image"] = "image"
    screenshot: Screenshot
    label: str | None = None  # e.g. "Screenshot 3 of 12"; rendered as text just before the image
    detail: Literal["full", "coarse"] = "full"
    """"coarse": a judgment that needs no fine print (relevance); a judge may send it smaller
    (``JudgeConfig.relevance_image_max_side``). Evidence, rescoring and outcome stay "full"."""


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: list[TextPart | ImagePart]

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=[TextPart(text=text)])

    @classmethod
    def user(cls, *parts: str | TextPart | ImagePart) -> Message:
        return cls(role="user", content=[TextPart(text=p) if isinstance(p, str) else p for p in parts])


class Sampling(BaseModel):
    """Sampling parameters sent with every call (always explicit: never provider defaults)."""

    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(default=2048, ge=1)
    seed: int | None = None
    reply_room: int | None = Field(default=None, ge=1, exclude=True)
    """At most this many reply tokens: the room this call's prompt leaves in the judge's context,
    set per call by the budget (`verifier.budget`), never configured. Left out of dumps, and so of
    the response cache key: a reply that fits is the same under any larger room."""


def _add_known(a: int | None, b: int | None) -> int | None:
    """A sum of counts some servers leave out: None only when none of them said."""
    return None if a is None and b is None else (a or 0) + (b or 0)


class Usage(BaseModel):
    """Accounting for one logical call (all its transport retries and re-asks)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int | None = None  # prompt tokens the server's prefix cache served, if it says
    latency_s: float = 0.0
    attempts: int = 0  # HTTP requests actually sent
    cached: bool = False  # served from the on-disk response cache

    def __add__(self, other: Usage) -> Usage:
        return Usage(prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                     completion_tokens=self.completion_tokens + other.completion_tokens,
                     cached_prompt_tokens=_add_known(self.cached_prompt_tokens, other.cached_prompt_tokens),
                     latency_s=self.latency_s + other.latency_s,
                     attempts=self.attempts + other.attempts,
                     cached=self.cached and other.cached)


class Reply(BaseModel, Generic[T]):
    parsed: T
    usage: Usage
    model: str
    raw: str = ""


@runtime_checkable
class Judge(Protocol):
    """One async backend. Implementations own concurrency, timeouts, retries and usage."""

    async def complete(self, messages: list[Message], output_model: type[T], *, stage: str,
                       sampling: Sampling | None = None) -> Reply[T]:
        """Return the reply parsed into `output_model`, or raise a `JudgeError` subclass."""
        ...

    async def aclose(self) -> None:
        ...
