"""Smoke-test helpers: a tiny policy built in code and a real `GRPOTrainer` run on CPU.

Why here (not under tests/): the GRPO recipe's `--tiny` smoke mode, this package's tests and the
engine tier (real vLLM judge) all need "run N GRPO steps with these reward functions" on a machine
with no model hub. The policy is a 1-layer random Llama with a byte-level BPE tokenizer trained on
a few sentences and a chat template, so conversational datasets work; its outputs are noise, which
is fine: the point is that TRL really calls, awaits and logs the verifier rewards. A tiny LLaVA
(`build_tiny_vlm_policy`) exercises the vision-language path: image prompts, image columns.

Needs the `train` extra (trl, transformers, datasets, torch) and `tokenizers`.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "{%- for m in messages -%}<|im_start|>{{ m['role'] }}\n"
    "{%- if m['content'] is string -%}{{ m['content'] }}"
    "{%- else -%}{%- for p in m['content'] -%}{%- if p['type'] == 'text' -%}{{ p['text'] }}"
    "{%- endif -%}{%- endfor -%}{%- endif -%}<|im_end|>\n{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_start|>assistant\n{%- endif -%}"
)
CORPUS = [
    "Open the airline website and search for flights from Boston to Denver.",
    "Click the search button, then type the date into the field and press enter.",
    "The cheapest flight costs 99 dollars. Done.",
    "Find the cheapest hotel in Paris for two nights and book it.",
    "Scroll down, read the price list, and answer with the total.",
]


def _tiny_llama_config(tok: Any, *, max_positions: int = 512, tie: bool = True) -> Any:
    """The 1-layer, 32-wide Llama every tiny policy uses, sized to `tok`'s vocabulary."""
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                       num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=max_positions,
                       eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None,
                       tie_word_embeddings=tie)


def _save_tiny_llama(out: Path, tok: Any, *, seed: int, max_positions: int = 512) -> Path:
    """Random weights (seeded) for `_tiny_llama_config(tok)`, saved beside the tokenizer in `out`."""
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    LlamaForCausalLM(_tiny_llama_config(tok, max_positions=max_positions)).save_pretrained(out)
    return out


def build_tiny_policy(out_dir: str | os.PathLike[str], *, vocab_size: int = 300, seed: int = 0) -> Path:
    """Write a tiny random causal LM + tokenizer (with chat template) to `out_dir`; returns it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    out = Path(out_dir)
    if (out / "config.json").exists() and (out / "tokenizer.json").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(CORPUS * 4, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return _save_tiny_llama(out, fast, seed=seed)


def build_tiny_tool_policy(out_dir: str | os.PathLike[str], *, seed: int = 0) -> Path:
    """The tiny text policy with a tool-calling chat template TRL can parse (its Qwen2.5 template,
    read from the installed TRL), for `tools=` / `environment_factory=` runs."""
    from transformers import AutoTokenizer
    from trl.chat_template_utils import qwen2_5_chat_template

    out = Path(out_dir)
    if (out / "config.json").exists() and (out / "tokenizer.json").exists():
        return out
    tok = AutoTokenizer.from_pretrained(build_tiny_policy(out / "text-base", seed=seed))
    tok.add_special_tokens({"additional_special_tokens": ["<tool_call>", "</tool_call>"]})
    tok.chat_template = qwen2_5_chat_template
    tok.save_pretrained(out)
    return _save_tiny_llama(out, tok, seed=seed, max_positions=1024)


def build_tiny_vlm_policy(out_dir: str | os.PathLike[str], *, seed: int = 0) -> Path:
    """Write a tiny random LLaVA (CLIP vision tower + 1-layer Llama) with its processor to `out_dir`.

    LLaVA, because its processor (CLIPImageProcessor) needs no torchvision, which CPU-only
    environments often lack; 28x28 inputs give 4 patches + CLS = 5 image tokens per image.
    """
    import torch
    from transformers import (
        AutoTokenizer,
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    out = Path(out_dir)
    if (out / "config.json").exists() and (out / "processor_config.json").exists():
        return out
    tok = AutoTokenizer.from_pretrained(build_tiny_policy(out / "text-base", seed=seed))
    tok.add_special_tokens({"additional_special_tokens": ["<image>"]})
    template = CHAT_TEMPLATE.replace("{{ p['text'] }}",
                                     "{{ p['text'] }}{%- elif p['type'] == 'image' -%}<image>")
    tok.chat_template = template
    processor = LlavaProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 28},
                                                                  crop_size={"height": 28, "width": 28}),
                               tokenizer=tok, patch_size=14, vision_feature_select_strategy="full",
                               num_additional_image_tokens=1, chat_template=template)
    torch.manual_seed(seed)
    vision = CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                              num_attention_heads=2,
                              image_size=28, patch_size=14, projection_dim=16)
    text = _tiny_llama_config(tok, tie=False)
    config = LlavaConfig(vision_config=vision, text_config=text, vision_feature_layer=-1,
                         image_token_index=tok.convert_tokens_to_ids("<image>"),
                         vision_feature_select_strategy="full")
    LlavaForConditionalGeneration(config).save_pretrained(out)
    processor.save_pretrained(out)
    return out


TASKS = ["Find the cheapest flight from Boston to Denver.", "Book a hotel in Paris for two nights.",
         "Read the price list and answer with the total.", "Search for a red bicycle under 200 dollars."]


def tiny_cua_dataset(n_tasks: int = 2, *, with_images: bool = False) -> Any:
    """A conversational prompt dataset of web tasks with a `task_id` column.

    With `with_images`, each prompt starts with an image part and the row carries the initial
    "screenshot" in an `image` column (TRL's VLM dataset convention), which the reward adapters
    turn into the trajectory's initial screenshot.
    """
    from datasets import Dataset
    from PIL import Image

    rows = []
    for k in range(n_tasks):
        if with_images:
            content: Any = [{"type": "image"}, {"type": "text", "text": TASKS[k % len(TASKS)]}]
        else:
            content = TASKS[k % len(TASKS)]
        row = {"prompt": [{"role": "user", "content": content}], "task_id": f"tiny-{k}"}
        if with_images:
            row["image"] = Image.new("RGB", (56, 56), (255, 255 - 40 * k, 255))
        rows.append(row)
    return Dataset.from_list(rows)


def grpo_smoke_config(output_dir: str | os.PathLike[str], *, num_generations: int = 4, max_steps: int = 1,
                      reward_weights: Sequence[float] | None = None,
                      multi_objective_aggregation: str = "sum_then_normalize", **overrides: Any) -> Any:
    """A `GRPOConfig` small enough for a CPU step in seconds (no vLLM, no logging backends)."""
    from trl import GRPOConfig

    kw: dict[str, Any] = {
        "output_dir": str(output_dir), "per_device_train_batch_size": num_generations,
        "num_generations": num_generations,
        "max_completion_length": 8, "max_steps": max_steps, "learning_rate": 1e-4, "logging_steps": 1,
        "report_to": [], "save_strategy": "no", "use_cpu": True, "bf16": False, "dataloader_num_workers": 0,
        "seed": 0, "reward_weights": list(reward_weights) if reward_weights is not None else None,
        "multi_objective_aggregation": multi_objective_aggregation, "log_completions": False,
        "temperature": 1.0,
    }
    kw.update(overrides)
    return GRPOConfig(**kw)


def run_grpo_smoke(reward_funcs: Sequence[Any], *, output_dir: str | os.PathLike[str],
                   model_dir: str | os.PathLike[str] | None = None, dataset: Any = None, vlm: bool = False,
                   environment_factory: Any = None, **config_overrides: Any) -> Any:
    """Train a few GRPO steps of a tiny policy with `reward_funcs`; returns the trainer.

    `vlm=True` uses the tiny LLaVA and image prompts; `environment_factory` uses the tool-calling
    text policy and hands TRL the factory (rollouts then reach the rewards as `environments`).
    `trainer.state.log_history` holds `rewards/<name>/mean` and the `log_metric` values; the engine
    tier passes rewards pointed at a real judge, unit tests a scripted one.
    """
    from trl import GRPOTrainer

    if environment_factory is not None:
        build, default = build_tiny_tool_policy, "tiny-tool-policy"
    else:
        build, default = (build_tiny_vlm_policy, "tiny-vlm") if vlm else (build_tiny_policy, "tiny-policy")
    model_dir = build(model_dir or Path(output_dir) / default)
    trainer = GRPOTrainer(model=str(model_dir), reward_funcs=list(reward_funcs),
                          args=grpo_smoke_config(output_dir, **config_overrides),
                          train_dataset=dataset if dataset is not None else tiny_cua_dataset(with_images=vlm),
                          environment_factory=environment_factory)
    trainer.train()
    return trainer
