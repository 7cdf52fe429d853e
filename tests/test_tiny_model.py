"""The demo/engine-tier judge model: random but terse (it prefers tokens that close a JSON string,
array or object, so constrained replies stay short: the engine tier's time is decoding), with a
tokenizer that counts prompts about as a real judge's does, and a cache that rebuilds stale builds."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")  # the train extra; the core install has no torch

from serving import tiny_model
from serving.demo import ensure_tiny_model


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    """One real build, made the way the demo judge makes it: `ensure_tiny_model` over a cache that
    holds an older build's marker (it must rebuild, not serve the stale model)."""
    from transformers import AutoTokenizer, Qwen2VLForConditionalGeneration

    root = tmp_path_factory.mktemp("tiny")
    venv_bin = root / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    os.chmod(venv_bin / "python", 0o755)
    out = root / "model"
    out.mkdir()
    (out / ".tiny_qwen2vl_build").write_text("stamp-of-an-older-build\n")
    ensure_tiny_model(root / "venv", out)
    model = Qwen2VLForConditionalGeneration.from_pretrained(out, dtype=torch.bfloat16)
    return out, AutoTokenizer.from_pretrained(out), model.eval()


def _next_logits(tok, model, text: str):
    ids = tok(text, return_tensors="pt").input_ids
    with torch.no_grad():
        return model(input_ids=ids).logits[0, -1].float()


def _closes(tok, token_id: int) -> bool:
    return any(c in tok.decode([token_id]) for c in '"]}')


def test_a_stale_cached_build_is_rebuilt(built):
    out, tok, _ = built
    assert tiny_model.is_current(out) and (out / "model.safetensors").is_file()
    assert tok.vocab_size + len(tok.get_added_vocab()) >= tiny_model.VOCAB_SIZE


def test_the_tokenizer_counts_english_prompts_like_a_real_one(built):
    """About 4 characters a token for a real Qwen tokenizer on this text; the 512-entry tokenizer of
    before spent a token per 1.6 characters, which made the demo's 32k context far tighter."""
    from verifier.rendering import system_prompt

    _, tok, _ = built
    text = system_prompt(None).text
    ratio = len(text) / len(tok(text).input_ids)
    assert 3.3 <= ratio <= 4.5, ratio


def test_greedy_choice_inside_an_open_string_closes_it(built):
    _, tok, model = built
    for text in ('{"reasoning": "The agent opened the page', '{"name": "x", "items": ["a", "b',
                 '{"primary_intent": "buy'):
        logits = _next_logits(tok, model, text)
        assert _closes(tok, int(logits.argmax())), (text, tok.decode([int(logits.argmax())]))


def test_a_boolean_is_false_where_a_true_would_need_evidence(built):
    """Every list closes at once, so a `true` critical-point violation could cite nothing (an
    invalid reply, re-asked until the stage falls back): the model prefers `false`."""
    _, tok, model = built
    false = set(tiny_model._false_tokens(tok))
    true = [i for t, i in tok.get_vocab().items() if (s := tok.convert_tokens_to_string([t]).strip())
            and ("true".startswith(s) or s.startswith("true"))]
    for text in ('{"reasoning": "x", "penalties": [], "critical_point_violation": ', '{"success": '):
        logits = _next_logits(tok, model, text)
        assert max(logits[i] for i in false) > max(logits[i] for i in true), text
    inside = _next_logits(tok, model, '{"reasoning": "The agent f')  # inside a string, closing still wins
    assert _closes(tok, int(inside.argmax()))


def test_the_rest_of_the_model_stays_random(built):
    _, tok, model = built
    logits = _next_logits(tok, model, '{"reasoning": "The agent')
    false = set(tiny_model._false_tokens(tok))
    others = torch.tensor([not _closes(tok, i) and i not in false for i in range(tiny_model.VOCAB_SIZE)])
    closers = torch.tensor([_closes(tok, i) for i in range(tiny_model.VOCAB_SIZE)])
    rest = logits[others]
    assert rest.std() > 0.1  # not a constant head: the non-closing tokens still differ
    assert logits[closers].min() > rest.max() - 1.0  # yet every closer is near the top
    # two prompts give different distributions (the weights are random, not a lookup table)
    assert not torch.allclose(logits, _next_logits(tok, model, "Screenshot 3 of 12 shows"))


def test_the_build_is_reused_while_current(built):
    out, _, _ = built
    before = (out / "model.safetensors").stat().st_mtime_ns
    assert tiny_model.build_tiny_qwen2vl(out) == out
    assert (out / "model.safetensors").stat().st_mtime_ns == before
    assert Path(out / ".tiny_qwen2vl_build").read_text().strip()
