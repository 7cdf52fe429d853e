"""`InProcessJudge`: the `Judge` protocol on vLLM's async engine (`AsyncLLM`), no HTTP.

For offline scoring on a GPU node where starting a server is overhead. The engine lives on its own
event-loop thread; every `complete()` (from any loop or thread) becomes one engine request as soon
as it is made, so requests batch continuously exactly as in ``vllm serve`` (the earlier
``LLM.chat`` design waited for a whole batch to finish before starting the next). Conversations
are rendered with the engine's own chat renderer, the JSON schema is enforced per request through
``SamplingParams(structured_outputs=StructuredOutputsParams(json=schema))``, the token budget is
sized from the schema like the HTTP judge's (`reply_token_budget`), and replies are parsed and
re-asked exactly like the HTTP backend's.

Screenshots are handed over as decoded PIL images (``image_pil`` parts): nothing is encoded at
all, a screenshot is decoded once per content hash (a small LRU), downscaled only when over the
limits, and vLLM's ``uuid`` names those pixels (source hash + size) so its multimodal cache hits.

vLLM is imported only when an `InProcessJudge` is built (an optional extra: the core never imports
it); it must run in the judge environment (`serving/setup_judge_env.sh`). Like any vLLM offline
script, the caller needs an ``if __name__ == "__main__":`` guard (the engine core is spawned).
"""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import os
import threading
import time
import uuid
from collections import OrderedDict
from typing import Any, TypeVar

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from verifier.errors import JudgeError, JudgeInvalidOutputError, JudgeTruncatedError, JudgeUnavailableError
from verifier.judge.base import Message, Reply, Sampling, Usage
from verifier.judge.images import prepare_ahead, target_size
from verifier.judge.schema import ReplyParseError, json_schema_for, parse_reply, reply_token_budget
from verifier.judge.served import (
    DEFAULT_IMAGE_LIMITS,
    PRESET_LIMITS,
    ByteBoundTokenizer,
    EncodeTokenizer,
    ServedModel,
)
from verifier.judge.wire import render_chat
from verifier.trajectory import Screenshot

from .command import STRUCTURED_OUTPUTS
from .presets import JudgePreset, get_preset

T = TypeVar("T", bound=BaseModel)
TRUNCATION_NOTE = ("Your previous reply was cut off at the length limit. Answer again with the same JSON "
                   "object, keeping every text field much shorter.")


class InProcessConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = None  # overrides the preset's
    preset: str = "qwen2.5-vl-7b"
    served_model_name: str = "judge"  # reported as Reply.model
    tensor_parallel_size: int | None = Field(default=None, ge=1)
    max_model_len: int | None = Field(default=None, ge=256)
    gpu_memory_utilization: float | None = Field(default=None, gt=0.0, le=1.0)
    image_max_side: int | None = Field(default=None, ge=16)
    image_max_pixels: int | None = Field(default=1_310_720, ge=256)
    image_cache_size: int = Field(default=64, ge=0, description="decoded screenshots kept (LRU)")
    reask_retries: int = Field(default=2, ge=0, le=5)
    sampling: Sampling = Field(default_factory=Sampling)
    max_tokens_cap: int = Field(default=8192, ge=1, description="as JudgeConfig.max_tokens_cap")
    llm_kwargs: dict[str, Any] = Field(default_factory=dict, description="engine arguments, applied last")


def llm_kwargs(cfg: InProcessConfig, preset: JudgePreset | None = None) -> dict[str, Any]:
    """The engine arguments equivalent to `serve-judge`'s flags (pure; testable without vLLM)."""
    p = preset or get_preset(cfg.preset)
    model = cfg.model or p.model
    if not model:
        raise JudgeError(f"preset {p.name!r} has no default model: set InProcessConfig.model")
    kwargs: dict[str, Any] = {
        "model": model, "dtype": p.dtype, "max_model_len": cfg.max_model_len or p.max_model_len,
        "tensor_parallel_size": cfg.tensor_parallel_size or p.tensor_parallel_size,
        "limit_mm_per_prompt": {"image": p.max_images, "video": 0},
        "mm_processor_kwargs": p.mm_processor_kwargs, "enable_prefix_caching": True,
        "structured_outputs_config": dict(STRUCTURED_OUTPUTS), "enforce_eager": p.enforce_eager}
    gpu_mem = cfg.gpu_memory_utilization or p.gpu_memory_utilization
    if gpu_mem is not None:
        kwargs["gpu_memory_utilization"] = gpu_mem
    if p.max_num_seqs:
        kwargs["max_num_seqs"] = p.max_num_seqs
    return {**kwargs, **cfg.llm_kwargs}


class AsyncEngine:
    """`vllm.v1.engine.async_llm.AsyncLLM` on a private event-loop thread.

    AsyncLLM belongs to the loop it runs on, while judges are called from TRL's loop, from
    ``asyncio.run`` in offline scoring, or from several loops at once: each call is handed to the
    engine's loop with ``run_coroutine_threadsafe``.
    """

    def __init__(self, engine_kwargs: dict[str, Any]) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="inprocess-judge", daemon=True)
        self._thread.start()
        self.engine: Any = None
        self.engine = self.submit(self._start(engine_kwargs)).result()

    @staticmethod
    async def _start(kwargs: dict[str, Any]) -> Any:
        from vllm.config import StructuredOutputsConfig
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        kwargs = dict(kwargs)
        if isinstance(kwargs.get("structured_outputs_config"), dict):
            kwargs["structured_outputs_config"] = StructuredOutputsConfig(**kwargs["structured_outputs_config"])
        return AsyncLLM.from_engine_args(AsyncEngineArgs(**kwargs))

    def submit(self, coro: Any) -> cf.Future:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    @property
    def alive(self) -> bool:
        return self.engine is not None and self._thread.is_alive() and not self._loop.is_closed()

    async def generate(self, conversation: list[dict[str, Any]], params: Any) -> Any:
        """One chat request (runs on the engine's loop); the final `RequestOutput`."""
        from vllm.renderers import ChatParams

        renderer = self.engine.renderer
        chat = ChatParams(chat_template_kwargs={"add_generation_prompt": True, "continue_final_message": False})
        tok = renderer.default_chat_tok_params.with_kwargs(add_special_tokens=False)
        _, prompts = await renderer.render_chat_async([conversation], chat, tok)
        final = None
        async for out in self.engine.generate(prompts[0], params, request_id=uuid.uuid4().hex):
            final = out
        return final

    def close(self) -> None:
        if not self.alive:
            return
        self._loop.call_soon_threadsafe(self.engine.shutdown)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        # Dropped now, while the interpreter is whole: AsyncLLM.__del__ at interpreter exit would
        # run its shutdown again after module globals are gone (a noisy TypeError).
        self.engine = None


class InProcessJudge:
    """Implements `Judge` over one `AsyncLLM`; safe to call from several event loops and threads."""

    def __init__(self, config: InProcessConfig, *, engine: AsyncEngine | None = None) -> None:
        self.config = config
        preset = get_preset(config.preset)
        for key, value in preset.env.items():  # e.g. the CPU KV-cache size; must precede engine start
            os.environ.setdefault(key, value)
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        self._SamplingParams, self._StructuredOutputsParams = SamplingParams, StructuredOutputsParams
        self.engine = engine if engine is not None else AsyncEngine(llm_kwargs(config, preset))
        self.generations = 0  # engine requests made (for tests and tuning)
        self.decodes = 0  # screenshots decoded
        self._images: OrderedDict[str, tuple[Image.Image, str]] = OrderedDict()
        self._images_lock = threading.Lock()
        self._decoding: dict[str, threading.Lock] = {}

    async def aclose(self) -> None:
        await asyncio.to_thread(self.engine.close)

    # ---- the Judge protocol --------------------------------------------------------------------
    async def complete(self, messages: list[Message], output_model: type[T], *, stage: str,
                       sampling: Sampling | None = None) -> Reply[T]:
        sampling = sampling or self.config.sampling
        schema = json_schema_for(output_model)
        budget = reply_token_budget(schema, floor=sampling.max_tokens, cap=self.config.max_tokens_cap,
                                    room=sampling.reply_room)
        conversation = await asyncio.to_thread(self._render, messages)
        params = self._SamplingParams(
            temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=budget,
            seed=sampling.seed, structured_outputs=self._StructuredOutputsParams(json=schema))
        usage, followup, truncated_before = Usage(), [], False
        rounds = self.config.reask_retries + 1
        for round_no in range(1, rounds + 1):
            start = time.monotonic()
            out = await self._generate(conversation + followup, params, stage, usage)
            completion = out.outputs[0]
            usage = usage + Usage(prompt_tokens=len(out.prompt_token_ids or []),
                                  completion_tokens=len(completion.token_ids), attempts=1,
                                  latency_s=time.monotonic() - start)
            raw = completion.text
            if completion.finish_reason == "length":
                if truncated_before or round_no == rounds:
                    raise JudgeTruncatedError(f"reply truncated at max_tokens={budget}",
                                              stage=stage, last_reply=raw, usage=usage)
                truncated_before, followup = True, [{"role": "user", "content": TRUNCATION_NOTE}]
                continue
            try:
                return Reply(parsed=parse_reply(raw, output_model), usage=usage,
                             model=self.config.served_model_name, raw=raw)
            except ReplyParseError as exc:
                if round_no == rounds:
                    raise JudgeInvalidOutputError(f"invalid output after {rounds} rounds: {exc.feedback}",
                                                  stage=stage, last_reply=raw, usage=usage) from exc
                followup = [{"role": "assistant", "content": raw or "(empty reply)"},
                            {"role": "user", "content": exc.feedback}]
        raise AssertionError("unreachable")  # pragma: no cover

    async def _generate(self, conversation: list[dict], params: Any, stage: str, usage: Usage) -> Any:
        if not self.engine.alive:
            raise JudgeUnavailableError("in-process judge is closed", stage=stage, usage=usage)
        self.generations += 1
        try:
            return await asyncio.wrap_future(self.engine.submit(self.engine.generate(conversation, params)))
        except ValueError as exc:  # vLLM's request validation (prompt too long, too many images)
            raise JudgeError(f"request rejected by the engine: {exc}", stage=stage, usage=usage) from exc
        except Exception as exc:  # engine died or failed mid-request
            raise JudgeUnavailableError(f"in-process engine failed: {type(exc).__name__}: {exc}",
                                        stage=stage, usage=usage) from exc

    async def served_model(self) -> ServedModel:
        """The context this engine was built with, for the run's budget (`verifier.budget`): text
        counted by the engine's own tokenizer (a token per byte where it is not at hand)."""
        preset = get_preset(self.config.preset)
        tok = getattr(getattr(self.engine, "engine", None), "tokenizer", None)
        return ServedModel(model=self.config.served_model_name, listed=True, server_kind="in-process",
                           context_tokens=self.config.max_model_len or preset.max_model_len,
                           context_source="config", preset=preset.name,
                           image_limits=PRESET_LIMITS.get(preset.name, DEFAULT_IMAGE_LIMITS),
                           tokenizer=EncodeTokenizer(tok) if callable(getattr(tok, "encode", None))
                           else ByteBoundTokenizer(), tokenizer_source="engine")

    def reply_budget(self, output_model: type[BaseModel], sampling: Sampling | None = None) -> int:
        """The ``max_tokens`` a call of `output_model` asks for (what the budget reserves)."""
        floor = (sampling or self.config.sampling).max_tokens
        return reply_token_budget(json_schema_for(output_model), floor=floor, cap=self.config.max_tokens_cap)

    def prepare_images(self, screenshots: list[Screenshot]) -> int:
        """Decode `screenshots` ahead of the calls that show them (the pipeline calls this in a
        worker thread while the rubric call runs; see `OpenAICompatJudge.prepare_images`)."""
        return prepare_ahead(screenshots, self._pil_part, self.config.image_cache_size)

    def _render(self, messages: list[Message]) -> list[dict[str, Any]]:
        """Protocol messages -> OpenAI-format chat messages, images as PIL ``image_pil`` parts."""
        return render_chat(messages, image=self._pil_part)

    def _pil_part(self, shot: Screenshot) -> dict[str, Any]:
        """The decoded screenshot (downscaled only over the limits), decoded once per content hash."""
        key = shot.sha256
        with self._images_lock:
            key_lock = self._decoding.setdefault(key, threading.Lock())
        with key_lock:  # single flight: calls sharing a screenshot decode it once
            with self._images_lock:
                hit = self._images.get(key)
                if hit is not None:
                    self._images.move_to_end(key)
            if hit is None:
                hit = self._decode(shot, key)
        return {"type": "image_pil", "image_pil": hit[0], "uuid": hit[1]}

    def _decode(self, shot: Screenshot, key: str) -> tuple[Image.Image, str]:
        img = shot.image()
        size = target_size(img.width, img.height, self.config.image_max_side, self.config.image_max_pixels)
        if size != img.size:
            img = img.resize(size, Image.Resampling.LANCZOS)
        hit = (img, f"{key}:{size[0]}x{size[1]}")
        with self._images_lock:
            self.decodes += 1
            self._images[key] = hit
            while len(self._images) > self.config.image_cache_size:
                self._images.popitem(last=False)
            self._decoding.pop(key, None)
        return hit
