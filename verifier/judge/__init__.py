"""Judge backends. `Judge` is the protocol; `OpenAICompatJudge` the HTTP implementation."""
from .base import ImagePart, Judge, Message, Reply, Sampling, TextPart, Usage

__all__ = ["ImagePart", "Judge", "Message", "Reply", "Sampling", "TextPart", "Usage"]
