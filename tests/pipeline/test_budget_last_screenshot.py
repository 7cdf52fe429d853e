"""The budget never drops the last final screenshot (issue 38 §10).

Letting the "fewer screenshots" step drop images while any were left (instead of while more than
one was) sent an outcome call with no screenshot at all when even one did not fit: a verdict on a
run the judge never saw. No test noticed.
"""
from __future__ import annotations

import pytest
from test_budget import _budget, _parts

from verifier.budget import ContextOverflowError


@pytest.mark.parametrize("shots", [1, 3])
def test_a_call_that_fits_only_without_any_screenshot_is_refused_not_sent_blind(shots) -> None:
    b = _budget(10_000)
    parts = _parts(images=shots)
    per_image = b.image_tokens(parts.images[0])
    text_only = b.prompt_tokens(_parts(images=0))
    b.context = text_only + 100 + per_image // 2  # the reply (the 100 reserve) and half an image
    with pytest.raises(ContextOverflowError) as err:
        got = b.fit(parts, reserve=100, stage="outcome", lean_per_call="e" * 500, images_droppable=True)
        pytest.fail(f"sent with {len(got.parts.images)} screenshot(s) (cuts {got.cuts})")
    assert err.value.needed > b.context
