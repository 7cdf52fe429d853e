"""What the served judge model can take: its context length, its per-image token cost, its tokenizer.

Why: a prompt built without looking at the judge's context fails only when the server answers 400
(issue 24: a 121-step case overflowed the 32k CPU demo judge after minutes of work). The budgeter
(`verifier.budget`) and `check-judge` (`verifier.judgecheck`) both read these facts from here, so a
run and the check that predicts it agree.

Where each fact comes from, first match wins:
- context length: ``JudgeConfig.context_tokens``; vLLM's ``GET /v1/models`` (``max_model_len``);
  the preset named by ``JudgeConfig.preset``; else unknown (no budget is enforced).
- image tokens: the preset's pixel limits (``JudgeConfig.preset``, default the Qwen2.5-VL limits)
  run through the Qwen2-VL resize rule on the image's size as sent.
- text tokens: the server's ``POST /tokenize`` (vLLM) when it answers, else a conservative
  characters-per-token bound (`CharBoundTokenizer`).

The preset facts below mirror `serving/presets.py` (tested equal there): the verifier may not import
`serving`, which sits above it.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import urllib.error
import urllib.request
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

QWEN25_TOKEN_PX = 28  # Qwen2/2.5-VL: patch 14, 2x2 merge -> one token per 28x28 pixels
QWEN3_TOKEN_PX = 32  # Qwen3-VL: patch 16, 2x2 merge
IMAGE_WRAP_TOKENS = 2  # <|vision_start|> ... <|vision_end|>

log = logging.getLogger("cua_verifier.judge")


@dataclass(frozen=True)
class PresetLimits:
    """The limits a `serve-judge` preset starts vLLM with (the verifier's copy of them)."""

    name: str
    max_model_len: int
    max_images: int
    max_pixels: int
    min_pixels: int
    token_px: int = QWEN25_TOKEN_PX

    @property
    def max_image_tokens(self) -> int:
        return self.max_pixels // (self.token_px * self.token_px) + IMAGE_WRAP_TOKENS


def _q25(name: str, max_len: int) -> PresetLimits:
    px = QWEN25_TOKEN_PX * QWEN25_TOKEN_PX
    return PresetLimits(name, max_len, 16, 1280 * px, 4 * px)


def _q3(name: str, max_len: int) -> PresetLimits:
    px = QWEN3_TOKEN_PX * QWEN3_TOKEN_PX
    return PresetLimits(name, max_len, 16, 1280 * px, 4 * px, QWEN3_TOKEN_PX)


PRESET_LIMITS: dict[str, PresetLimits] = {p.name: p for p in [
    _q25("qwen2.5-vl-3b", 32768), _q25("qwen2.5-vl-7b", 32768), _q25("qwen2.5-vl-32b", 32768),
    _q25("qwen2.5-vl-72b", 65536), _q3("qwen3-vl-4b", 65536), _q3("qwen3-vl-8b", 65536),
    _q3("qwen3-vl-32b", 65536), _q3("qwen3-vl-30b-a3b", 32768),
    PresetLimits("cpu-tiny", 32768, 64, 64 * 28 * 28, 4 * 28 * 28)]}
#: Image limits assumed when no preset is named: the Qwen2.5-VL presets' (1280 tokens at most).
DEFAULT_IMAGE_LIMITS = PRESET_LIMITS["qwen2.5-vl-7b"]


def image_tokens(width: int, height: int, limits: PresetLimits = DEFAULT_IMAGE_LIMITS) -> int:
    """Prompt tokens of one image of `width` x `height` pixels: the Qwen2-VL processor's resize
    (each side rounded to the token size, the area brought within [min_pixels, max_pixels], aspect
    kept), one token per token_px x token_px cell, plus the two wrapping tokens."""
    f = limits.token_px
    h, w = max(height, 1), max(width, 1)
    hb, wb = max(f, round(h / f) * f), max(f, round(w / f) * f)
    if hb * wb > limits.max_pixels:
        beta = math.sqrt(h * w / limits.max_pixels)
        hb, wb = max(f, math.floor(h / beta / f) * f), max(f, math.floor(w / beta / f) * f)
    elif hb * wb < limits.min_pixels:
        beta = math.sqrt(limits.min_pixels / (h * w))
        hb, wb = math.ceil(h * beta / f) * f, math.ceil(w * beta / f) * f
    return (hb // f) * (wb // f) + IMAGE_WRAP_TOKENS


class Tokenizer(Protocol):
    """Counts the prompt tokens of a text (an upper bound is fine; an undercount is not)."""

    def count(self, text: str) -> int: ...


@dataclass
class CharBoundTokenizer:
    """No tokenizer endpoint: assume at most `chars_per_token` characters per token. 2.5 is below
    what BPE tokenizers of the Qwen family average on English, JSON and URLs (about 3.5-4.5), so
    the estimate errs long; a byte-level BPE never spends more tokens than UTF-8 bytes, so the
    estimate is also capped there."""

    chars_per_token: float = 2.5

    def count(self, text: str) -> int:
        return min(math.ceil(len(text) / self.chars_per_token), len(text.encode("utf-8")))


class ByteBoundTokenizer:
    """A token per UTF-8 byte: an upper bound for any byte-level BPE, for a local engine whose own
    tokenizer is not at hand."""

    def count(self, text: str) -> int:
        return len(text.encode("utf-8"))


@dataclass
class EncodeTokenizer:
    """Any object with a Hugging Face style ``encode(text, add_special_tokens=False)``."""

    tokenizer: Any

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))


#: The most UTF-8 bytes one token is believed to stand for. BPE vocabularies hold long runs
#: (whitespace, "=====") of a few dozen bytes; a count implying more per token, over a whole
#: prompt, is a broken endpoint, and an undercount is the one error the budget cannot afford.
MAX_BYTES_PER_TOKEN = 64


def plausible_count(value: object, n_bytes: int) -> int | None:
    """A /tokenize count the budget may believe for a text of `n_bytes` bytes, else None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if n_bytes / MAX_BYTES_PER_TOKEN <= value and value > 0 else None


@dataclass
class RemoteTokenizer:
    """vLLM's ``POST /tokenize``: exact counts, cached per text (the shared context of a
    verification is counted once). Short texts are bounded by their UTF-8 length without a request."""

    url: str
    model: str
    api_key: str = "EMPTY"
    timeout_s: float = 30.0
    exact_above: int = 2000  # bytes; below this the byte bound is close enough
    #: When the endpoint fails or answers an implausible count: the bound the budget uses without
    #: a tokenizer. A token per byte would make every long call "overflow" while the judge is fine.
    fallback: Tokenizer = field(default_factory=CharBoundTokenizer)
    fallbacks: int = 0  # counts answered by `fallback` (failed or implausible replies)
    _cache: OrderedDict[str, int] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _pending: dict[str, threading.Lock] = field(default_factory=dict)

    def count(self, text: str) -> int:
        n_bytes = len(text.encode("utf-8"))
        if n_bytes <= self.exact_above:
            return n_bytes
        key = hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
        with self._lock:
            if key in self._cache:
                return self._cache[key]
            flight = self._pending.setdefault(key, threading.Lock())
        with flight:  # single flight: 150 relevance calls share one context, counted once
            with self._lock:
                if key in self._cache:
                    return self._cache[key]
            try:
                body = _post_json(self.url, {"model": self.model, "prompt": text, "add_special_tokens": False},
                                  self.api_key, self.timeout_s)
                n = plausible_count(body.get("count") if isinstance(body, dict) else None, n_bytes)
            except (urllib.error.URLError, OSError, ValueError):
                n = None
            if n is None:  # failed or not believable: the character bound (not cached: asked again next time)
                with self._lock:
                    self.fallbacks += 1
                    self._pending.pop(key, None)
                if self.fallbacks == 1 or self.fallbacks % 1000 == 0:
                    log.warning("%s failed or gave an implausible count (%d times so far): prompts are "
                                "sized by the character bound until it answers", self.url, self.fallbacks)
                return self.fallback.count(text)
            with self._lock:
                self._cache[key] = n
                self._pending.pop(key, None)
                while len(self._cache) > 256:
                    self._cache.popitem(last=False)
        return n


@dataclass
class ServedModel:
    """The facts about one served judge model that decide whether a call fits."""

    model: str
    listed: bool | None = None  # None: the server does not list models
    listed_models: list[str] = field(default_factory=list)
    context_tokens: int | None = None
    context_source: str = "unknown"  # config | server | preset | unknown
    image_limits: PresetLimits = DEFAULT_IMAGE_LIMITS
    preset: str | None = None
    max_images: int | None = None  # from the preset; the server does not report it
    tokenizer: Tokenizer = field(default_factory=CharBoundTokenizer)
    tokenizer_source: str = "chars"  # server | chars
    server_kind: str = "unknown"  # vllm | openai-compatible | unknown

    def image_tokens(self, width: int, height: int) -> int:
        return image_tokens(width, height, self.image_limits)


def server_root(base_url: str) -> str:
    """``http://h:p/v1`` -> ``http://h:p`` (vLLM serves /tokenize and /metrics at the root)."""
    return base_url.rstrip("/").removesuffix("/v1")


def _post_json(url: str, payload: dict[str, Any], api_key: str, timeout_s: float) -> Any:
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST", headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {api_key}"})
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        return json.loads(resp.read(1 << 22) or b"null")


def get_json(url: str, api_key: str, timeout_s: float) -> Any:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"})
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        return json.loads(resp.read(1 << 22) or b"null")


def discover(base_url: str, model: str, *, api_key: str = "EMPTY", context_tokens: int | None = None,
             preset: str | None = None, chars_per_token: float = 2.5, timeout_s: float = 10.0) -> ServedModel:
    """Ask the server what it serves (never raises for an unreachable or non-vLLM server: the
    facts it cannot learn stay unknown, and the run's own calls report the outage)."""
    limits = PRESET_LIMITS.get(preset or "", DEFAULT_IMAGE_LIMITS)
    facts = ServedModel(model=model, image_limits=limits, preset=preset if preset in PRESET_LIMITS else None,
                        max_images=limits.max_images if preset in PRESET_LIMITS else None,
                        tokenizer=CharBoundTokenizer(chars_per_token))
    try:
        listing = get_json(base_url.rstrip("/") + "/models", api_key, timeout_s)
        entries = listing.get("data", []) if isinstance(listing, dict) else []
        facts.listed_models = [str(e.get("id")) for e in entries if isinstance(e, dict)]
        facts.listed = model in facts.listed_models if entries else None
        facts.server_kind = "openai-compatible"
        for e in entries:
            if isinstance(e, dict) and e.get("id") == model and isinstance(e.get("max_model_len"), int):
                facts.server_kind = "vllm"
                if context_tokens is None:
                    facts.context_tokens, facts.context_source = e["max_model_len"], "server"
    except (urllib.error.URLError, OSError, ValueError):
        pass
    if context_tokens is not None:
        facts.context_tokens, facts.context_source = context_tokens, "config"
    elif facts.context_tokens is None and facts.preset is not None:
        facts.context_tokens, facts.context_source = limits.max_model_len, "preset"
    if facts.context_tokens is None:
        return facts  # nothing to budget against: no need to count tokens
    url = server_root(base_url) + "/tokenize"
    try:
        body = _post_json(url, {"model": model, "prompt": "probe"}, api_key, timeout_s)
        if isinstance(body, dict) and isinstance(body.get("count"), int):
            facts.tokenizer, facts.tokenizer_source = RemoteTokenizer(
                url, model, api_key, fallback=CharBoundTokenizer(chars_per_token)), "server"
    except (urllib.error.URLError, OSError, ValueError):
        pass
    return facts


def discover_for(config: Any) -> ServedModel:
    """`discover` for a `JudgeConfig` (its first endpoint: replicas serve one model)."""
    return discover(config.base_urls[0], config.model, api_key=config.api_key(),
                    context_tokens=config.context_tokens, preset=config.preset,
                    chars_per_token=config.chars_per_token, timeout_s=min(10.0, config.timeout_s))


def fitting_presets(tokens: int) -> list[str]:
    """Presets whose context holds `tokens` (for the remedy of a call that fits nowhere here)."""
    return [p.name for p in PRESET_LIMITS.values() if p.max_model_len >= tokens and p.name != "cpu-tiny"]
