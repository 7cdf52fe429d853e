"""Build a tiny random-weight Qwen2-VL checkpoint in code, for the real-vLLM end-to-end tier.

No model hub is reachable from CI, and no vision-language weights ship in any package, so the
engine tier needs a checkpoint it can make itself. This one has the real Qwen2-VL architecture
(vision tower, merger, M-RoPE text decoder), a byte-level BPE tokenizer with the Qwen special tokens
and chat template, and an image processor capped at 64 image tokens. The tokenizer has 16,384
entries, trained here on English that every Python ships (`_english_corpus`), so it spends about as
many tokens on a prompt as a real judge's tokenizer does (about 3.6 characters a token on the
project's prompts, where Qwen's spends about 4; the first version's 512 entries spent one per 1.7
characters, which made the 32k demo context far tighter than any real judge's: issue 24).
Weights are random: verdicts are meaningless, but under constrained decoding every reply is
schema-valid, so the pipeline's plumbing runs for real. Two things are not random
(`_prefer_closing`): the output head prefers tokens that close a JSON string, array or object,
because a random model decoded greedily fills every string to its maxLength, which made decoding
most of the engine tier's time (a 5-screenshot verification took 80 s on 2 cores, 22 s with the
preference); and, less strongly, tokens that spell ``false``, because a model that closes every
list at once cannot back a ``true`` that must cite evidence (a critical-point violation or a
penalty needs steps or screenshots), so a random ``true`` there was an invalid reply every time.

Deterministic (fixed seed, fixed corpus): the same code and Python version give the same files
(about 10 MB; the build stamp covers the corpus, so another Python's build is not taken for this one).
Builds with the project's main environment (transformers 5.x, tokenizers, torch). torchvision is
not needed: tokenizer, image processor config and chat template are written separately rather than
through ``AutoProcessor``.

Standalone on purpose (no package imports): the CPU demo judge runs this file with the judge
environment's python (which has transformers/tokenizers/torch), while tests import it from the
project environment.

Usage: ``python serving/tiny_model.py OUT_DIR [--force]`` (reuses an up-to-date build unless
``--force``) or ``build_tiny_qwen2vl(out_dir)``.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
import sysconfig
from pathlib import Path

VOCAB_SIZE = 16384
MAX_PIXELS = 28 * 28 * 64  # at most 64 merged image tokens per image
MIN_PIXELS = 28 * 28 * 4
SEED = 0
CONST, CLOSE_BONUS, FALSE_BONUS = 1.0, 0.5, 0.25  # see _prefer_closing
BUILD_VERSION = "4"  # bump when the output changes; the marker file lets callers reuse a build

SPECIAL_TOKENS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
]

# A Qwen-style chat template: OpenAI-format content lists, one vision block per image.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if loop.first and message['role'] != 'system' -%}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{%- endif -%}"
    "<|im_start|>{{ message['role'] }}\n"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' or part['type'] == 'image_url' or 'image' in part -%}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{%- elif part['type'] == 'text' -%}{{ part['text'] }}"
    "{%- endif -%}{%- endfor -%}{%- endif -%}"
    "<|im_end|>\n"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_start|>assistant\n{%- endif -%}"
)

_CORPUS = """
You are a careful judge. Read the task, the rubric and the screenshots, then answer in JSON.
{"criteria": [{"id": 1, "name": "Search for the item", "score": 0.5, "max_score": 1.0}],
 "reasoning": "The agent opened the page, typed the query and clicked the first result.",
 "success": true, "relevant": false, "step": 12, "screenshot": 3, "categories": ["navigation"]}
The user asked the agent to book a table, find a trail, compare prices, fill a form and submit it.
Screenshot 1 of 12 shows the home page. The search box is empty. The final answer was correct.
Actions: click, type, scroll, wait, go_back, visit_url, key_press, answer, stop, hover, select.
Evidence supports the claim; the outcome is a failure because the cart was never checked out.
abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 .,;:!?'"()[]{}<>-_=+*/\\|@#$%^&~`
""" * 3


#: Standard-library packages whose docstrings join the tokenizer corpus (with every top-level module).
_STDLIB_PACKAGES = ("asyncio", "collections", "concurrent", "email", "html", "http", "importlib", "json",
                    "logging", "multiprocessing", "sqlite3", "unittest", "urllib", "wsgiref", "xml")
_DOCSTRING = re.compile(r'"""(.*?)"""', re.DOTALL)


def _english_corpus() -> str:
    """General English, present on every machine without a download: the Python reference's topic
    pages (`pydoc_data.topics`, about 0.5 MB) and the triple-quoted docstrings of the standard
    library's sources (about 1.6 MB). Not the project's prompts on purpose: a tokenizer trained on
    them would count our prompts more kindly than a real judge's tokenizer does."""
    parts: list[str] = []
    try:
        from pydoc_data.topics import topics
        parts += [topics[k] for k in sorted(topics)]
    except ImportError:  # some distributions split the docs out; the sources below still teach English
        pass
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(root.glob("*.py")) + sorted(
        f for pkg in _STDLIB_PACKAGES for f in (root / pkg).rglob("*.py") if "test" not in f.relative_to(root).parts
        and "tests" not in f.relative_to(root).parts)
    for f in files:
        try:
            parts += _DOCSTRING.findall(f.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return "\n".join(parts)


def _build_tokenizer(corpus: str | None = None):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    n_reserved_budget = VOCAB_SIZE - len(SPECIAL_TOKENS)
    trainer = trainers.BpeTrainer(vocab_size=n_reserved_budget, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator([_english_corpus() if corpus is None else corpus, _CORPUS], trainer=trainer)
    tok.add_special_tokens(SPECIAL_TOKENS)
    # Pad to exactly VOCAB_SIZE with reserved special tokens so every id the model can emit decodes.
    missing = VOCAB_SIZE - tok.get_vocab_size()
    tok.add_special_tokens([f"<|reserved_{i}|>" for i in range(missing)])
    assert tok.get_vocab_size() == VOCAB_SIZE, tok.get_vocab_size()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   unk_token=None, model_max_length=32768)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def _build_model(tok):
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    text = {"vocab_size": VOCAB_SIZE, "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_key_value_heads": 1,  # head_dim 64: CPU attention rejects 16
            "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [8, 12, 12]},
            "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"]}
    vision = {"depth": 1, "embed_dim": 64, "hidden_size": 128, "num_heads": 1, "mlp_ratio": 2, "in_channels": 3,
              "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}
    config = Qwen2VLConfig(text_config=text, vision_config=vision, tie_word_embeddings=False,
                           image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                           vision_start_token_id=ids["<|vision_start|>"],
                           vision_end_token_id=ids["<|vision_end|>"])
    torch.manual_seed(SEED)
    model = Qwen2VLForConditionalGeneration(config)
    _prefer_closing(model, tok)
    model = model.to(torch.bfloat16)
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.bos_token_id = ids["<|endoftext|>"]
    return model


def _prefer_closing(model, tok) -> None:
    """Make the random model terse: a fixed logit bonus for tokens that close a JSON string, array
    or object. Under constrained decoding a uniform random model fills every string to its
    maxLength (thousands of tokens a reply, most of the engine tier's time); with the bonus it
    closes them early, so replies stay short and schema-valid, and stay random elsewhere. Half the
    bonus goes to tokens of ``false``: with every list closed at once, a ``true`` that must cite
    evidence (`SideEffects`, `PenaltyItem` validators) could never be valid.

    How, with the weights otherwise random: residual dimension 0 carries a constant (every input
    embedding has CONST there and no layer writes to it), and the untied output head reads that
    dimension only for the closing and the ``false`` tokens."""
    import torch

    with torch.no_grad():
        lm = model.get_input_embeddings().weight
        lm[:, 0] = CONST
        for layer in model.model.language_model.layers:
            layer.self_attn.o_proj.weight[0, :] = 0.0
            layer.mlp.down_proj.weight[0, :] = 0.0
        head = model.lm_head.weight
        head.copy_(lm)
        head[:, 0] = 0.0
        closers = [i for t, i in tok.get_vocab().items()
                   if any(c in tok.convert_tokens_to_string([t]) for c in '"]}')]
        head[closers, 0] = CLOSE_BONUS
        head[_false_tokens(tok), 0] = FALSE_BONUS  # half: inside a string, closing still wins


def _false_tokens(tok) -> list[int]:
    """Tokens a JSON ``false`` can start with or be ("f", " fa", "false"...)."""
    out = []
    for t, i in tok.get_vocab().items():
        s = tok.convert_tokens_to_string([t]).strip()
        if s and ("false".startswith(s) or s.startswith("false")) and not any(c in s for c in '"]}'):
            out.append(i)
    return out


def _preprocessor_config() -> dict:
    return {
        "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2VLProcessor",
        "do_resize": True, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
        "do_convert_rgb": True, "resample": 3,
        "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
        "min_pixels": MIN_PIXELS, "max_pixels": MAX_PIXELS,
        "size": {"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS},
        "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
    }


def _stamp(corpus: str) -> str:
    return hashlib.sha256((BUILD_VERSION + CHAT_TEMPLATE + _CORPUS + corpus).encode()).hexdigest()


def is_current(out_dir: str | Path) -> bool:
    """Whether `out_dir` holds a complete build of this code from this Python's corpus."""
    marker = Path(out_dir) / ".tiny_qwen2vl_build"
    return marker.is_file() and marker.read_text().strip() == _stamp(_english_corpus())


def build_tiny_qwen2vl(out_dir: str | Path, *, force: bool = False) -> Path:
    """Write the checkpoint to `out_dir` (created) and return it; reuse an up-to-date complete build
    (an older `BUILD_VERSION`, template or corpus is rebuilt)."""
    out = Path(out_dir)
    marker = out / ".tiny_qwen2vl_build"
    corpus = _english_corpus()
    stamp = _stamp(corpus)
    if not force and marker.is_file() and marker.read_text().strip() == stamp:
        return out
    out.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)  # a build stopped halfway must not pass for a complete one
    tok = _build_tokenizer(corpus)
    model = _build_model(tok)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    (out / "chat_template.jinja").write_text(CHAT_TEMPLATE)
    pre = json.dumps(_preprocessor_config(), indent=2)
    (out / "preprocessor_config.json").write_text(pre)
    (out / "processor_config.json").write_text(json.dumps({"processor_class": "Qwen2VLProcessor"}, indent=2))
    marker.write_text(stamp)
    return out


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--force"]
    if len(args) != 1:
        sys.exit("usage: python serving/tiny_model.py OUT_DIR [--force]")
    print(build_tiny_qwen2vl(args[0], force="--force" in sys.argv[1:]))
