"""`OpenAICompatJudge`: the one real judge backend, over the OpenAI-compatible chat API.

It covers ``vllm serve`` and remote providers. One logical call = render messages (images as
downscaled data URLs) -> transport (replicas, semaphore, transport retries; see `endpoints`) ->
parse into the output model -> on invalid output, re-ask. The re-ask shows the model its own bad
reply (as an assistant message) and the validation error (as a user message), as instructor does;
a truncated reply (``finish_reason == "length"``) is never parsed, only re-asked once with a note.
Each re-ask sends the original messages plus only the latest failure, so prompts stay bounded.

The token budget is sized per call from the output schema's worst-case reply (`reply_token_budget`),
between the configured ``sampling.max_tokens`` and ``max_tokens_cap``, and sent as
``max_completion_tokens`` (vLLM reads it first; ``max_tokens`` is deprecated). vLLM >= 0.32 clamps
the budget to the context left after the prompt (a reply cut by that limit comes back as
``finish_reason == "length"`` with fewer completion tokens than asked for: a `JudgeTruncatedError`
saying the context is full, never re-asked, since a re-ask only adds to the prompt; a reply cut at
the full budget is re-asked once with a note) and answers 400 only when the prompt
alone is too long, which no smaller budget fixes. Servers that answer 400 because prompt + budget
exceeds the context get the request once more with the budget that still fits (parsed from the
error text); other 400s are not retried.

Structured output is requested through ``response_format`` (json_schema, strict) or, for providers
without it, ``json_object`` with the schema in the system prompt. Never the removed ``guided_*``
fields: vLLM >= 0.12 ignores them silently.

Example::

    judge = OpenAICompatJudge(JudgeConfig(base_urls=["http://127.0.0.1:8010/v1"], model="judge"))
    reply = await judge.complete([Message.system("..."), Message.user("...")], Verdict, stage="outcome")
    reply.parsed, reply.usage.attempts, reply.model
"""
from __future__ import annotations

import asyncio
import logging
import re
import threading
from typing import Any, TypeVar

import openai
from pydantic import BaseModel

from ..errors import (
    JudgeCircuitOpenError,
    JudgeDeadlineError,
    JudgeError,
    JudgeInvalidOutputError,
    JudgeMalformedResponseError,
    JudgeTruncatedError,
    JudgeUnavailableError,
)
from ..trajectory import Screenshot
from ..waits import Waits
from .base import Message, Reply, Sampling, Usage
from .cache import ResponseCache, cache_key, cacheable
from .config import JudgeConfig
from .endpoints import EndpointPool, MalformedReply, Tally
from .images import ImageEncoder, prepare_ahead
from .ladder import CircuitOpen, DeadlinePassed, describe, is_transient
from .schema import (
    ReplyParseError,
    json_schema_for,
    parse_reply,
    reply_token_budget,
    schema_instructions,
    schema_name,
)
from .served import ServedModel, discover_for
from .wire import render_chat, url_part

log = logging.getLogger("cua_verifier.judge")
T = TypeVar("T", bound=BaseModel)

#: A context-overflow retry below this many completion tokens is not worth sending.
MIN_FIT_TOKENS = 64
#: A re-ask echoes the invalid reply back at most this many characters per token of the reply
#: budget (a valid reply fits in about 4): a runaway reply is not sent back whole.
ECHO_CHARS_PER_TOKEN = 4
_CONTEXT = re.compile(r"maximum context length is (\d+)")
_PROMPT = re.compile(r"(\d+) input tokens|(\d+) in the messages|prompt contains (?:at least )?(\d+)")

TRUNCATION_NOTE = ("Your previous reply was cut off at the length limit before the JSON was complete. "
                   "Answer again with the same JSON object, keeping every text field much shorter.")


class OpenAICompatJudge:
    """Implements the `Judge` protocol over ``openai.AsyncOpenAI``. Safe to share across loops."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.encoder = ImageEncoder(max_side=config.image_max_side, max_pixels=config.image_max_pixels,
                                    fmt=config.image_format, jpeg_quality=config.jpeg_quality,
                                    cache_size=config.image_cache_size,
                                    cache_bytes=int(config.image_cache_mb * 2**20), media_dir=config.image_media_dir)
        self.coarse = None if config.relevance_image_max_side is None else ImageEncoder(
            max_side=config.relevance_image_max_side, max_pixels=config.image_max_pixels, fmt=config.image_format,
            jpeg_quality=config.jpeg_quality, cache_size=config.image_cache_size,
            cache_bytes=int(config.image_cache_mb * 2**20), media_dir=config.image_media_dir)
        self.cache = ResponseCache(config.cache_dir) if config.cache_dir else None
        self._pool = EndpointPool(config)
        self._served: ServedModel | None = None
        self._served_lock = threading.Lock()

    def __repr__(self) -> str:  # the API key is never part of this object's state
        return f"OpenAICompatJudge(model={self.config.model!r}, base_urls={self.config.base_urls!r})"

    @property
    def waits(self) -> Waits:
        """Requests that waited for one of the `max_concurrency` connections (see `verifier.waits`)."""
        return self._pool.waits

    async def aclose(self) -> None:
        await self._pool.aclose()

    async def complete(self, messages: list[Message], output_model: type[T], *, stage: str,
                       sampling: Sampling | None = None) -> Reply[T]:
        """One logical call: cached reply, or transport + re-ask until a valid `output_model`.

        Raises:
            JudgeUnavailableError: transport failures outlived ``transport_retries``
                (`JudgeMalformedResponseError` when the last was a 200 that is not a chat
                completion; `JudgeCircuitOpenError` when the breaker refused to send at all;
                `JudgeDeadlineError` when the enclosing `deadline` ran out).
            JudgeTruncatedError: the last reply hit ``max_tokens``.
            JudgeInvalidOutputError: replies stayed invalid for ``reask_retries`` re-asks.
            JudgeError: a non-retryable HTTP error (e.g. 400, 401, 404).
        """
        sampling = sampling or self.config.sampling
        schema = json_schema_for(output_model)
        key = None
        if self.cache is not None and cacheable(sampling):
            key = await asyncio.to_thread(
                cache_key, model=self.config.model, messages=messages, schema=schema,
                mode=self.config.structured_output, sampling=sampling, image_settings=self._image_settings)
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    parsed = parse_reply(hit.raw, output_model, lenient=self._lenient)
                except ReplyParseError:
                    log.warning("judge cache entry for stage=%s no longer validates; calling the judge", stage)
                else:
                    log.debug("judge call stage=%s served from cache", stage)
                    return Reply(parsed=parsed, usage=Usage(cached=True), model=hit.model, raw=hit.raw)
        if self._prepared(messages):  # nothing left but dictionary lookups: no thread hop
            rendered = self._render(messages, output_model)
        else:
            rendered = await asyncio.to_thread(self._render, messages, output_model)
        reply = await self._ask(rendered, output_model, schema, stage, sampling)
        if key is not None and self.cache is not None:
            self.cache.put(key, reply.raw, reply.model)
        return reply

    async def served_model(self) -> ServedModel:
        """What the server serves (context, tokenizer; `verifier.judge.served`), asked once per
        judge: every call is budgeted against it before it is sent (`verifier.budget`)."""
        if self._served is None:
            await asyncio.to_thread(self._discover_once)
        assert self._served is not None
        return self._served

    def _discover_once(self) -> None:
        with self._served_lock:  # a thread lock: this judge is shared across event loops
            if self._served is None:
                self._served = discover_for(self.config)

    def reply_budget(self, output_model: type[BaseModel], sampling: Sampling | None = None) -> int:
        """The ``max_completion_tokens`` a call of `output_model` asks for (what the budget reserves)."""
        floor = (sampling or self.config.sampling).max_tokens
        return reply_token_budget(json_schema_for(output_model), floor=floor, cap=self.config.max_tokens_cap)

    def prepare_images(self, screenshots: list[Screenshot]) -> int:
        """Hash and encode `screenshots` ahead of the calls that send them; returns how many were
        prepared. Blocking: the pipeline runs it in a worker thread while the rubric call, which
        sends no image, waits on the judge, so the relevance fan-out that follows renders from the
        cache on the event loop instead of queueing on threads (issue 10: ~0.1-0.2 s of the critical
        path at M = 50). At most ``image_cache_size`` distinct screenshots (`prepare_ahead`)."""
        enc = self.coarse or self.encoder  # what the relevance fan-out that follows will send
        return prepare_ahead(screenshots, enc.encode, enc.cache_size)

    @property
    def _image_settings(self) -> str:
        key = self.encoder.settings_key
        return key if self.coarse is None else f"{key}|coarse:{self.coarse.settings_key}"

    def _encoder_for(self, part: Any) -> ImageEncoder:
        return self.coarse if self.coarse is not None and part.detail == "coarse" else self.encoder

    @property
    def _lenient(self) -> bool:
        return self.config.structured_output == "json_object"

    # ---- rendering ----------------------------------------------------------------------------
    def _prepared(self, messages: list[Message]) -> bool:
        """Every image of `messages` is already in the encoder's cache (text-only calls too)."""
        return all(self._encoder_for(p).ready(p.screenshot) for m in messages for p in m.content
                   if p.type == "image")

    def _render(self, messages: list[Message], output_model: type[BaseModel]) -> list[dict[str, Any]]:
        """Protocol messages -> OpenAI chat messages (runs in a worker thread: images are encoded)."""
        coarse = url_part(self.coarse, image_uuid=self.config.image_uuid) if self.coarse is not None else None
        out = render_chat(messages, self.encoder, image_uuid=self.config.image_uuid, coarse=coarse)
        if self._lenient:
            instructions = schema_instructions(output_model)
            if out and out[0]["role"] == "system":
                out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{instructions}"}
            else:
                out.insert(0, {"role": "system", "content": instructions})
        return out

    def _request(self, messages: list[dict[str, Any]], output_model: type[BaseModel],
                 schema: dict[str, Any], sampling: Sampling, max_tokens: int) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.config.model, "messages": messages, "temperature": sampling.temperature,
            "top_p": sampling.top_p, "max_completion_tokens": max_tokens, "timeout": self.config.timeout_s}
        if sampling.seed is not None:
            request["seed"] = sampling.seed
        if self.config.structured_output == "json_schema":
            request["response_format"] = {"type": "json_schema", "json_schema": {
                "name": schema_name(output_model), "schema": schema, "strict": True}}
        else:
            request["response_format"] = {"type": "json_object"}
        return request

    # ---- the re-ask layer ---------------------------------------------------------------------
    async def _ask(self, rendered: list[dict[str, Any]], output_model: type[T], schema: dict[str, Any],
                   stage: str, sampling: Sampling) -> Reply[T]:
        tally = Tally()
        followup: list[dict[str, Any]] = []
        last_raw: str | None = None
        truncated_before = False
        rounds = self.config.reask_retries + 1
        max_tokens = reply_token_budget(schema, floor=sampling.max_tokens, cap=self.config.max_tokens_cap,
                                        room=sampling.reply_room)
        for round_no in range(1, rounds + 1):
            request = self._request(rendered + followup, output_model, schema, sampling, max_tokens)
            response = await self._send(request, tally, stage, last_raw)
            max_tokens = request["max_completion_tokens"]  # lowered by a context-overflow retry: keep it
            if response.usage is not None:
                tally.prompt_tokens += response.usage.prompt_tokens or 0
                tally.completion_tokens += response.usage.completion_tokens or 0
                cached = response.usage.cached_prompt_tokens
                if cached is not None:
                    tally.cached_prompt_tokens = (tally.cached_prompt_tokens or 0) + cached
            choice = response.choices[0] if response.choices else None
            raw = (choice.message.content if choice is not None else None) or ""
            last_raw = raw
            if choice is not None and choice.finish_reason == "length":
                room = response.usage.completion_tokens if response.usage is not None else None
                if room is not None and room < max_tokens:  # vLLM clamped the budget: the context is full
                    raise JudgeTruncatedError(
                        f"reply cut after {room} tokens, below max_tokens={max_tokens}: the prompt "
                        f"({response.usage.prompt_tokens} tokens) left no more room in the judge's context; "
                        "serve the judge with a larger --max-model-len (a re-ask would only be longer)",
                        stage=stage, last_reply=raw, usage=_usage(tally))
                if truncated_before or round_no == rounds:
                    raise JudgeTruncatedError(
                        f"reply truncated at max_tokens={max_tokens} ({tally.attempts} requests)",
                        stage=stage, last_reply=raw, usage=_usage(tally))
                truncated_before = True
                followup = [{"role": "user", "content": TRUNCATION_NOTE}]
                log.warning("judge reply truncated (stage=%s, round %d/%d); re-asking", stage, round_no, rounds)
                continue
            try:
                parsed = parse_reply(raw, output_model, lenient=self._lenient)
            except ReplyParseError as exc:
                if round_no == rounds:
                    raise JudgeInvalidOutputError(
                        f"invalid output after {rounds} rounds: {exc.feedback}", stage=stage,
                        last_reply=raw, usage=_usage(tally)) from exc
                followup = [{"role": "assistant", "content": echoed(raw, max_tokens)},
                            {"role": "user", "content": exc.feedback}]
                log.warning("judge reply invalid (stage=%s, round %d/%d): %s; re-asking",
                            stage, round_no, rounds, exc.feedback[:300])
                continue
            usage = _usage(tally)
            model_id = response.model or self.config.model
            log.debug("judge call stage=%s model=%s attempts=%d rounds=%d prompt_tokens=%d "
                      "completion_tokens=%d latency=%.2fs", stage, model_id, usage.attempts, round_no,
                      usage.prompt_tokens, usage.completion_tokens, usage.latency_s)
            return Reply(parsed=parsed, usage=usage, model=model_id, raw=raw)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _send(self, request: dict[str, Any], tally: Tally, stage: str, last_raw: str | None) -> Any:
        """Transport layer call, with SDK errors mapped to our typed errors.

        A 400 saying prompt + max_tokens exceeds the context is retried once with the max_tokens
        that fits (`request` is updated in place so later re-asks keep it).
        """
        try:
            return await self._pool.send(request, tally, stage=stage)
        except openai.BadRequestError as exc:
            fit = fitting_max_tokens(f"{exc} {getattr(exc, 'body', '')}", request["max_completion_tokens"])
            if fit is None:
                raise self._mapped(exc, tally, stage, last_raw) from exc
            log.warning("judge context too small for max_tokens=%d (stage=%s); retrying with %d",
                        request["max_completion_tokens"], stage, fit)
            request["max_completion_tokens"] = fit
        except (openai.APIError, MalformedReply, CircuitOpen, DeadlinePassed) as exc:
            raise self._mapped(exc, tally, stage, last_raw) from exc
        try:
            return await self._pool.send(request, tally, stage=stage)
        except (openai.APIError, MalformedReply, CircuitOpen, DeadlinePassed) as exc:
            raise self._mapped(exc, tally, stage, last_raw) from exc

    def _mapped(self, exc: Exception, tally: Tally, stage: str, last_raw: str | None) -> JudgeError:
        """The typed error for an SDK/transport exception."""
        if isinstance(exc, DeadlinePassed):
            return JudgeDeadlineError(f"judge call not finished within its deadline: {exc}", stage=stage,
                                      last_reply=last_raw, usage=_usage(tally))
        if isinstance(exc, CircuitOpen):
            return JudgeCircuitOpenError(f"judge not asked: {exc}", stage=stage, last_reply=last_raw,
                                         usage=_usage(tally), retry_in_s=exc.retry_in_s)
        if isinstance(exc, MalformedReply):  # a proxy page, a wrong URL, a cut connection
            return JudgeMalformedResponseError(
                f"malformed HTTP response from the judge endpoint after {tally.attempts} requests "
                f"(not an OpenAI-compatible server?): {exc}", stage=stage, last_reply=last_raw, usage=_usage(tally))
        if is_transient(exc):
            return JudgeUnavailableError(f"judge unavailable after {tally.attempts} requests: {describe(exc)}",
                                         stage=stage, last_reply=last_raw, usage=_usage(tally))
        hint = ""
        if isinstance(exc, openai.BadRequestError) and self.config.structured_output == "json_schema":
            hint = " (if the server lacks json_schema support, set structured_output='json_object')"
        body = str(getattr(exc, "body", "") or "")[:300]
        return JudgeError(f"judge request rejected: {describe(exc)}: {body}{hint}",
                          stage=stage, last_reply=last_raw, usage=_usage(tally))


def echoed(raw: str, max_tokens: int) -> str:
    """The invalid reply as a re-ask shows it: cut to `ECHO_CHARS_PER_TOKEN` x the reply budget,
    with the cut said, so the model still sees where it went wrong."""
    if not raw:
        return "(empty reply)"
    limit = ECHO_CHARS_PER_TOKEN * max(max_tokens, 256)
    if len(raw) <= limit:
        return raw
    return f"{raw[:limit]}\n... ({len(raw) - limit} more characters of this reply cut)"


def fitting_max_tokens(error_text: str, requested: int) -> int | None:
    """The max_tokens that fits the context, from vLLM's 400 text; None when the error is not a
    context overflow, cannot be parsed, or leaves fewer than ``MIN_FIT_TOKENS`` (the prompt itself
    is too long: a smaller max_tokens would not help).

    vLLM words it as "... maximum context length is 4096 tokens and your request has 2778 input
    tokens (8000 > 4096 - 2778)" or, in older versions, "... However, you requested 8292 tokens
    (100 in the messages, 8192 in the completion)".
    """
    context, prompt = _CONTEXT.search(error_text), _PROMPT.search(error_text)
    if context is None or prompt is None:
        return None
    fit = int(context.group(1)) - int(next(g for g in prompt.groups() if g is not None))
    return fit if MIN_FIT_TOKENS <= fit < requested else None


def _usage(tally: Tally) -> Usage:
    return Usage(prompt_tokens=tally.prompt_tokens, completion_tokens=tally.completion_tokens,
                 cached_prompt_tokens=tally.cached_prompt_tokens,
                 latency_s=round(tally.latency_s, 6), attempts=tally.attempts)


def make_judge(config: JudgeConfig | None = None) -> OpenAICompatJudge:
    """The judge for `config` (default: `JudgeConfig.from_env()`)."""
    return OpenAICompatJudge(config if config is not None else JudgeConfig.from_env())
