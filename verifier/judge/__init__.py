"""Judge backends. `Judge` is the protocol; `OpenAICompatJudge` the HTTP implementation.

``make_judge(config)`` is the one constructor the rest of the package uses; the HTTP backend (and
the ``openai`` SDK) is imported only when a judge is actually built.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import ImagePart, Judge, Message, Reply, Sampling, TextPart, Usage
from .config import JudgeConfig

if TYPE_CHECKING:
    from .openai_compat import OpenAICompatJudge

__all__ = ["ImagePart", "Judge", "JudgeConfig", "Message", "OpenAICompatJudge", "Reply", "Sampling",
           "TextPart", "Usage", "make_judge"]


def make_judge(config: JudgeConfig | None = None) -> OpenAICompatJudge:
    """Build the judge for `config` (default: `JudgeConfig.from_env()`)."""
    from .openai_compat import make_judge as _make

    return _make(config)


def __getattr__(name: str) -> Any:
    if name == "OpenAICompatJudge":
        from .openai_compat import OpenAICompatJudge

        return OpenAICompatJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
