"""Defaults sized for vLLM: the judge port, per-endpoint concurrency, file:// images, token budget."""
from __future__ import annotations

import json

from serving.command import DEFAULT_PORT, ServeConfig, build_command
from serving.presets import get_preset
from verifier.judge.config import JudgeConfig
from verifier.judge.openai_compat import fitting_max_tokens

# What vLLM >= 0.32 answers when the prompt alone is over the context (it clamps the completion
# budget otherwise, so this is the only context-length 400 left).
VLLM_PROMPT_TOO_LONG = ("This model's maximum context length is 4096 tokens. However, your prompt contains "
                        "5000 input tokens, which exceeds this limit even without any output tokens. "
                        "Please reduce the length of the input prompt.")


def test_judge_port_is_not_trl_vllm_serve_port():
    cfg = ServeConfig(preset=get_preset("qwen2.5-vl-7b"))
    assert DEFAULT_PORT == cfg.port == 8010  # trl vllm-serve and GRPOConfig.vllm_server_port use 8000
    assert cfg.base_url == "http://127.0.0.1:8010/v1"


def test_concurrency_default_covers_a_long_trajectory_relevance_round():
    # 100 screenshots, a quarter repeats: 75 relevance calls must fit in one wave
    assert JudgeConfig(base_urls=["http://h:8010"], model="m").max_concurrency >= 75


def test_media_dir_becomes_allowed_local_media_path(tmp_path):
    argv = build_command(ServeConfig(preset=get_preset("cpu-tiny"), model="/m", media_dir=str(tmp_path))).argv
    assert argv[argv.index("--allowed-local-media-path") + 1] == str(tmp_path.resolve())
    assert "--allowed-local-media-path" not in build_command(ServeConfig(preset=get_preset("cpu-tiny"),
                                                                         model="/m")).argv
    assert json.loads(argv[argv.index("--structured-outputs-config") + 1])["backend"] == "guidance"


def test_prompt_alone_too_long_is_not_retried_with_a_smaller_budget():
    assert fitting_max_tokens(VLLM_PROMPT_TOO_LONG, 2048) is None
