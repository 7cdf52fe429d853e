"""A tiny vision-language policy, built in code, that acts in the browser (CPU smoke runs).

No model hub is reachable here and random weights almost never write a parseable tool call. So the
smoke policy is a random-weight tiny LLaVA (CLIP vision tower + 1-layer Llama; its image processor
needs no torchvision) that speaks TRL's Qwen3-VL chat template (so TRL parses its tool calls), with
its outputs mapped onto valid actions: the body of every scripted call in `ACTIONS` (the exact
text the template renders between `<tool_call>` and `</tool_call>`) is one vocabulary entry, and
`_map_to_actions` sets a few weights so that an assistant turn is `<tool_call>`, one of those
bodies (uniformly), `</tool_call>`, then ends. The tags are generated as their own token ids, as a
real Qwen model does: transformers >= 5.25 parses generated token ids and only lets a control token
(an added token the chat template contains, such as `<tool_call>`) delimit a tool call when it was
generated as that id, not when it is spelled inside another token. Every rollout therefore calls a
browser tool; which one is up to sampling. The actions are not good ones: the point is that GRPO,
the browser and the verifier really run together. GRPO updates all weights from there.

Needs the `train` extra and `tokenizers`.
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

BUILD_VERSION = "6"
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>"]
TAGS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

#: The calls the tiny policy can make (each body one token, between the tag tokens).
ACTIONS = [("click", {"element": k}) for k in range(1, 9)] + [
    ("scroll", {"direction": "down"}), ("type", {"text": "mouse", "element": 3, "submit": True}),
    ("goto", {"url": "/shop/"}), ("go_back", {}), ("answer", {"text": "done"}),
    ("answer", {"text": "It cannot be done."})]


def _tool_call_text(name: str, args: dict[str, Any]) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(args)}}}\n</tool_call>'


def _corpus(tool_schemas: list[dict[str, Any]]) -> list[str]:
    from .tasks import TASKS

    lines = [json.dumps(s) for s in tool_schemas]
    lines += [t.instruction for t in TASKS.values()]
    lines += [_tool_call_text(n, a) for n, a in ACTIONS]
    lines.append("URL: http://127.0.0.1:8000/shop/ Title: Gadget Shop Elements: [1] link \"Home\" [2] button "
                 "\"Search\" [3] input \"Search\" Actions left: 12 The action failed: timeout")
    return lines * 4


def _action_tokens(template: str) -> list[str]:
    """The body of each scripted tool call exactly as the chat template renders it between
    `<tool_call>` and `</tool_call>`: one vocabulary entry each (the tags are tokens of their own)."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    probe = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"x": 0}, unk_token="x")))
    out = []
    for name, args in ACTIONS:
        text = probe.apply_chat_template(
            [{"role": "user", "content": "u"}, {"role": "assistant", "content": "",
              "tool_calls": [{"type": "function", "function": {"name": name, "arguments": args}}]}],
            chat_template=template, tokenize=False)
        start = text.index("<tool_call>") + len("<tool_call>")
        out.append(text[start:text.index("</tool_call>", start)])
    return out


def _build_tokenizer(tool_schemas: list[dict[str, Any]], template: str):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(_corpus(tool_schemas), trainers.BpeTrainer(
        vocab_size=600, special_tokens=SPECIAL, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in _action_tokens(template) + TAGS])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, model_max_length=4096,
                                   model_input_names=["input_ids", "attention_mask"])  # no token_type_ids
    return fast


def build_tiny_browser_policy(out_dir: str | os.PathLike[str], *, seed: int = 0) -> Path:
    """Write the tiny policy (model + processor) to `out_dir`; reused when up to date."""
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )
    from transformers.utils import get_json_schema
    from trl.chat_template_utils import qwen3_vl_chat_template

    from .env import BrowserEnv

    out = Path(out_dir)
    marker = out / ".tiny_browser_policy"
    stamp = f"{BUILD_VERSION}-{seed}"
    if marker.is_file() and marker.read_text() == stamp:
        return out
    out.mkdir(parents=True, exist_ok=True)
    schemas = [get_json_schema(getattr(BrowserEnv, n)) for n in ("answer", "click", "go_back", "goto", "scroll",
                                                                  "type")]
    tok = _build_tokenizer(schemas, qwen3_vl_chat_template)
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}),
        tokenizer=tok, patch_size=14, vision_feature_select_strategy="full", num_additional_image_tokens=1,
        chat_template=qwen3_vl_chat_template, image_token="<|image_pad|>")
    torch.manual_seed(seed)
    text = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                       num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
                       eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None,
                       tie_word_embeddings=False)
    vision = CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                              image_size=28, patch_size=14, projection_dim=16)
    config = LlavaConfig(vision_config=vision, text_config=text, vision_feature_layer=-1,
                         image_token_index=tok.convert_tokens_to_ids("<|image_pad|>"),
                         vision_feature_select_strategy="full")
    model = LlavaForConditionalGeneration(config)
    tok.chat_template = qwen3_vl_chat_template
    _map_to_actions(model, tok, seed=seed)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(out)
    processor.save_pretrained(out)
    marker.write_text(stamp)
    return out


def _map_to_actions(model: Any, tok: Any, *, seed: int) -> None:
    """Make the random policy answer every assistant turn with one tool call, then stop.

    Attention and MLP outputs start at zero, so the next-token logits depend on the current token
    only (a bigram model; GRPO updates those weights from there). Four orthogonal directions chain
    the turn: the end of the assistant header (`<|im_start|>assistant\n`) points at `<tool_call>`,
    `<tool_call>` at the action bodies (all equally likely), every body at `</tool_call>`, and
    `</tool_call>` at `<|im_end|>`. Everything else stays random. Milliseconds, deterministic, and
    no supervised pre-training needed.
    """
    import torch

    lm = model.model.language_model
    header = tok.apply_chat_template([{"role": "user", "content": "u"}], tokenize=False,
                                     add_generation_prompt=True)
    last = tok.encode(header, add_special_tokens=False)[-1]
    actions = [tok.convert_tokens_to_ids(t) for t in _action_tokens(tok.chat_template)]
    open_tag, close_tag = tok.convert_tokens_to_ids("<tool_call>"), tok.convert_tokens_to_ids("</tool_call>")
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in lm.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        dim = lm.embed_tokens.weight.shape[1]
        q, _ = torch.linalg.qr(torch.randn(dim, 4, generator=g))
        header, opened, body, closed = q.T  # orthonormal: each step points at the next one only
        lm.embed_tokens.weight[last] = header
        lm.embed_tokens.weight[open_tag] = opened
        for t in actions:
            lm.embed_tokens.weight[t] = body
        lm.embed_tokens.weight[close_tag] = closed
        k = 16.0 / dim ** 0.5  # RMSNorm turns a unit vector into sqrt(dim) * it: logit 16
        model.lm_head.weight[open_tag] = header * k
        for t in actions:
            model.lm_head.weight[t] = opened * k
        model.lm_head.weight[close_tag] = body * k
        model.lm_head.weight[tok.eos_token_id] = closed * k


def load_tiny_browser_policy(path: str | os.PathLike[str]) -> tuple[Any, Any]:
    """(model, processor) for `GRPOTrainer(model=..., processing_class=...)`.

    Why a subclass: TRL's tool loop hands a VLM the image positions as `token_type_ids` (Gemma) or
    `mm_token_type_ids` (Qwen); LLaVA places its image features by token id and takes neither
    (generation validates keyword arguments against `forward`), so the loaded LLaVA is given a
    class whose `forward` accepts and drops them. The checkpoint itself is a plain LLaVA.
    """
    from transformers import AutoProcessor, LlavaForConditionalGeneration

    class TinyBrowserLlava(LlavaForConditionalGeneration):
        @functools.wraps(LlavaForConditionalGeneration.forward)  # keeps the signature generate inspects
        def forward(self, *args: Any, token_type_ids: Any = None, mm_token_type_ids: Any = None,
                    **kwargs: Any) -> Any:
            return LlavaForConditionalGeneration.forward(self, *args, **kwargs)

        def _validate_model_kwargs(self, model_kwargs: dict[str, Any]) -> None:
            for key in ("token_type_ids", "mm_token_type_ids"):
                model_kwargs.pop(key, None)
            super()._validate_model_kwargs(model_kwargs)

    model = LlavaForConditionalGeneration.from_pretrained(path)
    model.__class__ = TinyBrowserLlava  # same weights and config, tolerant forward
    return model, AutoProcessor.from_pretrained(path)
