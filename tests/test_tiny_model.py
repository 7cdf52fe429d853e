"""The demo/engine-tier judge model is random but terse: it prefers tokens that close a JSON
string, array or object, so constrained replies stay short (the engine tier's time is decoding)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")  # the train extra; the core install has no torch

from serving import tiny_model


@pytest.fixture(scope="module")
def built():
    tok = tiny_model._build_tokenizer()
    return tok, tiny_model._build_model(tok)


def _next_logits(tok, model, text: str):
    ids = tok(text, return_tensors="pt").input_ids
    with torch.no_grad():
        return model(input_ids=ids).logits[0, -1].float()


def _closes(tok, token_id: int) -> bool:
    return any(c in tok.decode([token_id]) for c in '"]}')


def test_greedy_choice_inside_an_open_string_closes_it(built):
    tok, model = built
    for text in ('{"reasoning": "The agent opened the page', '{"name": "x", "items": ["a", "b',
                 '{"primary_intent": "buy'):
        logits = _next_logits(tok, model, text)
        assert _closes(tok, int(logits.argmax())), (text, tok.decode([int(logits.argmax())]))


def test_the_rest_of_the_model_stays_random(built):
    tok, model = built
    logits = _next_logits(tok, model, '{"reasoning": "The agent')
    others = torch.tensor([not _closes(tok, i) for i in range(tiny_model.VOCAB_SIZE)])
    rest = logits[others]
    assert rest.std() > 0.1  # not a constant head: the non-closing tokens still differ
    assert logits[~others].min() > rest.max() - 1.0  # yet every closer is near the top
    # two prompts give different distributions (the weights are random, not a lookup table)
    assert not torch.allclose(logits, _next_logits(tok, model, "Screenshot 3 of 12 shows"))
