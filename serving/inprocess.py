"""`InProcessJudge`: the `Judge` protocol on vLLM's Python engine (`vllm.LLM.chat`), no HTTP.

For offline scoring on a GPU node where starting a server is overhead: the verifier's stages call
`complete()` concurrently as usual; a worker thread gathers whatever requests are waiting and runs
them as one `LLM.chat` batch, with the JSON schema enforced per request through
``SamplingParams(structured_outputs=StructuredOutputsParams(json=schema))``. Replies are parsed and
re-asked exactly like the HTTP backend's.

vLLM is imported only when an `InProcessJudge` is built (an optional extra: the core never imports
it); it must run in the judge environment (`serving/setup_judge_env.sh`). Like any vLLM offline
script, the caller needs an ``if __name__ == "__main__":`` guard (the engine core is spawned).
"""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import os
import queue
import threading
import time
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from verifier.errors import JudgeError, JudgeInvalidOutputError, JudgeTruncatedError, JudgeUnavailableError
from verifier.judge.base import Message, Reply, Sampling, Usage
from verifier.judge.images import ImageEncoder
from verifier.judge.schema import ReplyParseError, json_schema_for, parse_reply
from verifier.judge.wire import render_chat

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
    image_max_side: int | None = Field(default=1280, ge=16)
    image_max_pixels: int | None = Field(default=1_310_720, ge=256)
    reask_retries: int = Field(default=2, ge=0, le=5)
    max_batch: int = Field(default=64, ge=1, description="most conversations per LLM.chat call")
    sampling: Sampling = Field(default_factory=Sampling)
    llm_kwargs: dict[str, Any] = Field(default_factory=dict, description="passed to vllm.LLM last")


def llm_kwargs(cfg: InProcessConfig, preset: JudgePreset | None = None) -> dict[str, Any]:
    """The `vllm.LLM(...)` arguments equivalent to `serve-judge`'s flags (pure; testable without vLLM)."""
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


class _Job:
    __slots__ = ("conversation", "future", "params")

    def __init__(self, conversation: list[dict], params: Any) -> None:
        self.conversation, self.params, self.future = conversation, params, cf.Future()


class InProcessJudge:
    """Implements `Judge` over one `vllm.LLM`; safe to call from several event loops and threads."""

    def __init__(self, config: InProcessConfig, *, llm: Any = None) -> None:
        self.config = config
        preset = get_preset(config.preset)
        for key, value in preset.env.items():  # e.g. the CPU KV-cache size; must precede engine start
            os.environ.setdefault(key, value)
        from vllm import LLM, SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        self._SamplingParams, self._StructuredOutputsParams = SamplingParams, StructuredOutputsParams
        self.llm = llm if llm is not None else LLM(**llm_kwargs(config, preset))
        self.encoder = ImageEncoder(max_side=config.image_max_side, max_pixels=config.image_max_pixels)
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._worker = threading.Thread(target=self._run, name="inprocess-judge", daemon=True)
        self._worker.start()
        self.batches: list[int] = []  # sizes of the LLM.chat batches run (for tests and tuning)

    async def aclose(self) -> None:
        self._jobs.put(None)
        await asyncio.to_thread(self._worker.join, 30)

    # ---- worker thread: drain the queue, one LLM.chat per batch -------------------------------
    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            batch = [job]
            while len(batch) < self.config.max_batch:
                try:
                    nxt = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._jobs.put(None)
                    break
                batch.append(nxt)
            self.batches.append(len(batch))
            try:
                outs = self.llm.chat([j.conversation for j in batch], [j.params for j in batch], use_tqdm=False)
            except Exception as exc:  # noqa: BLE001 - handed to every waiting caller
                for j in batch:
                    j.future.set_exception(exc)
                continue
            for j, out in zip(batch, outs):
                j.future.set_result(out)

    # ---- the Judge protocol --------------------------------------------------------------------
    async def complete(self, messages: list[Message], output_model: type[T], *, stage: str,
                       sampling: Sampling | None = None) -> Reply[T]:
        sampling = sampling or self.config.sampling
        schema = json_schema_for(output_model)
        conversation = await asyncio.to_thread(self._render, messages)
        params = self._SamplingParams(
            temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=sampling.max_tokens,
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
                    raise JudgeTruncatedError(f"reply truncated at max_tokens={sampling.max_tokens}",
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
        if not self._worker.is_alive():
            raise JudgeUnavailableError("in-process judge is closed", stage=stage, usage=usage)
        job = _Job(conversation, params)
        self._jobs.put(job)
        try:
            return await asyncio.wrap_future(job.future)
        except ValueError as exc:  # vLLM's request validation (prompt too long, too many images)
            raise JudgeError(f"request rejected by the engine: {exc}", stage=stage, usage=usage) from exc
        except Exception as exc:  # engine died or failed mid-batch
            raise JudgeUnavailableError(f"in-process engine failed: {type(exc).__name__}: {exc}",
                                        stage=stage, usage=usage) from exc

    def _render(self, messages: list[Message]) -> list[dict[str, Any]]:
        """Protocol messages -> OpenAI-format chat messages, images as data URLs (as over HTTP)."""
        return render_chat(messages, self.encoder)
