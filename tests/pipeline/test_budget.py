"""The context budgeter (issue 24) against a fake tokenizer: each shrink step, their order, the
final refusal, and the pipeline never sending a call its budget says overflows."""
from __future__ import annotations

import asyncio
import math

import pytest
from pipeline_helpers import make_traj, png

from verifier.budget import (
    STEPS,
    Budget,
    ContextOverflowError,
    Parts,
    SplitNeeded,
    remedy,
    reply_floor,
    reply_reserve,
)
from verifier.config import VerifierConfig
from verifier.judge.base import ImagePart
from verifier.judge.schema import json_schema_for, reply_token_budget
from verifier.judge.served import PRESET_LIMITS, CharBoundTokenizer, ServedModel, image_tokens
from verifier.pipeline import verify
from verifier.testing import ScriptedJudge
from verifier.trajectory import Screenshot


class FakeTokenizer:
    """One token per `per` characters; counts what it was asked."""

    def __init__(self, per: int = 1) -> None:
        self.per, self.calls = per, 0

    def count(self, text: str) -> int:
        self.calls += 1
        return math.ceil(len(text) / self.per)


def _budget(context: int, per: int = 1) -> Budget:
    served = ServedModel(model="m", context_tokens=context, tokenizer=FakeTokenizer(per),
                         image_limits=PRESET_LIMITS["cpu-tiny"])
    return Budget(served, context)


def _images(n: int) -> list[ImagePart]:
    return [ImagePart(screenshot=Screenshot.from_bytes(png("red" if i % 2 else "blue"), step=i), label=f"S{i}")
            for i in range(1, n + 1)]


def _parts(shared: str = "h" * 1000, per_call: str = "e" * 500, images: int = 0) -> Parts:
    return Parts(system="s" * 100, shared=shared, instructions="i" * 50, per_call=per_call, images=_images(images))


LEVELS = {1: "h" * 700, 2: "h" * 400, 3: "h" * 300}


def _fit(budget: Budget, parts: Parts, **kw):
    return budget.fit(parts, reserve=100, stage="rescoring", shared_at=LEVELS.__getitem__, **kw)


def test_a_call_that_fits_is_sent_as_built() -> None:
    b = _budget(5000)
    got = _fit(b, _parts())
    assert got.cuts == [] and got.tokens_before == got.tokens_after and got.parts.shared == "h" * 1000


@pytest.mark.parametrize(("context", "cuts"), [
    (1750, ["compress_thoughts"]),
    (1450, ["compress_thoughts", "shorten_older_thoughts"]),
    (1000, ["compress_thoughts", "shorten_older_thoughts", "drop_repeated_evidence"]),
])
def test_text_steps_apply_in_order_and_stop_once_it_fits(context: int, cuts: list[str]) -> None:
    got = _fit(_budget(context), _parts(), lean_per_call="e" * 100)
    assert got.cuts == cuts and got.tokens_after + 100 <= context < got.tokens_before + 100
    assert got.cuts == [s for s in STEPS if s in got.cuts]  # the fixed order


def test_a_long_prompt_gives_up_reply_room_down_to_the_floor_before_anything_is_cut() -> None:
    b = _budget(10_000)
    parts = _parts()
    prompt = b.prompt_tokens(parts)
    b.context = prompt + 60  # the reserve (100) does not fit; the floor (50) does
    got = _fit(b, parts, floor=50)
    assert got.cuts == [] and got.parts.shared == "h" * 1000 and got.reply_tokens == 60
    assert _fit(_budget(prompt + 100), _parts(), floor=50).reply_tokens is None  # the whole reserve: no note
    b.context = prompt + 49  # below the floor: now the history is cut, and the room is what is left
    got = _fit(b, _parts(), floor=50)
    assert got.cuts == ["compress_thoughts"] and got.reply_tokens is None  # 300 tokens freed: all of it
    b.context = prompt - 250
    got = _fit(b, _parts(), floor=50)
    assert got.cuts == ["compress_thoughts"] and got.reply_tokens == b.context - got.tokens_after >= 50
    with pytest.raises(ContextOverflowError, match=r"\+ 50 reply"):  # the failure names the floor it missed
        _fit(_budget(100 + 300 + 60), _parts(shared="h" * 300), floor=50)


def test_the_floor_is_half_the_reserve() -> None:
    assert reply_floor(8192) == 4096 and reply_floor(3705) == 1853 and reply_floor(1) == 1


def test_fewer_screenshots_drops_the_earliest_and_keeps_the_last() -> None:
    b = _budget(10_000)
    parts = _parts(images=3)
    per_image, last = b.image_tokens(parts.images[0]), parts.images[-1]
    b.context = b.prompt_tokens(parts) + 100 - per_image // 2  # one image too many
    got = b.fit(parts, reserve=100, stage="outcome", lean_per_call="e" * 500, images_droppable=True)
    assert got.cuts == ["fewer_screenshots"] and got.dropped_images == 1
    assert len(got.parts.images) == 2 and got.parts.images[-1] is last


def test_images_are_never_dropped_where_the_stage_needs_them() -> None:
    b = _budget(10_000)
    parts = _parts(per_call="", images=3)
    b.context = b.prompt_tokens(parts) + 100 - 1
    with pytest.raises(ContextOverflowError):
        b.fit(parts, reserve=100, stage="relevance")


def test_splittable_call_is_told_to_split_and_others_fail_typed() -> None:
    parts = _parts(shared="h" * 300)
    b = _budget(100 + 300 + 100)  # the system prompt, the shortest history and the reply: no room left
    with pytest.raises(SplitNeeded) as split:
        _fit(b, parts, splittable=True)
    with pytest.raises(ContextOverflowError) as final:
        _fit(b, _parts(shared="h" * 300))
    assert not isinstance(final.value, SplitNeeded)
    msg = str(final.value)
    assert f"context is {b.context} tokens" in msg and "--max-model-len" in msg and "not sent" in msg
    assert final.value.needed > b.context == final.value.context and split.value.stage == "rescoring"


def test_remedy_names_a_context_that_holds_the_call_and_the_presets_that_have_it() -> None:
    text = remedy(40_000, 32_768)
    assert "--max-model-len 65536" in text and "qwen2.5-vl-72b" in text and "qwen2.5-vl-7b" not in text


def test_image_tokens_follow_the_qwen2vl_resize_rule() -> None:
    q25 = PRESET_LIMITS["qwen2.5-vl-7b"]
    assert image_tokens(280, 280, q25) == 100 + 2  # 10 x 10 cells of 28 px
    assert image_tokens(1920, 1080, q25) <= 1280 + 2  # capped by max_pixels
    assert image_tokens(1920, 1080, PRESET_LIMITS["cpu-tiny"]) <= 64 + 2
    assert image_tokens(10, 10, q25) == 4 + 2  # raised to min_pixels


def test_char_bound_errs_long_and_never_above_bytes() -> None:
    tok = CharBoundTokenizer(2.5)
    assert tok.count("a" * 100) == 40 and tok.count("é") == 1


# ---- the pipeline --------------------------------------------------------------------------------

def _long_traj(steps: int = 40):
    thoughts = [f"thinking hard about step {i} " * 30 for i in range(1, steps + 1)]
    return make_traj([["red", "green", "blue", "yellow"][i % 4] for i in range(steps)], thoughts=thoughts)


def _judge(context: int) -> tuple[ScriptedJudge, FakeTokenizer]:
    tok = FakeTokenizer(per=4)
    judge = ScriptedJudge()
    judge.served = ServedModel(model="scripted", context_tokens=context, tokenizer=tok,
                               image_limits=PRESET_LIMITS["cpu-tiny"])
    return judge, tok


def _sent_tokens(budget: Budget, messages) -> int:
    system, user = messages
    texts = [p for p in user.content if p.type == "text"]
    return budget.prompt_tokens(Parts(system.content[0].text, texts[0].text,
                                      texts[1].text if len(texts) > 1 else "",
                                      "\n".join(t.text for t in texts[2:]),
                                      [p for p in user.content if p.type == "image"]))


def _reserve(req) -> int:
    """What the run keeps free for this call's reply: the schema's worst case, at most max_tokens."""
    return reply_reserve(req.output_model, reply_token_budget(json_schema_for(req.output_model), floor=2048,
                                                              cap=8192))


def _room(req) -> int:
    """The reply room the call was sent with: its reserve, or less (never below the floor) where the
    budget lowered it, and then the judge was told (`Sampling.reply_room`)."""
    room = req.sampling.reply_room if req.sampling is not None else None
    assert room is None or reply_floor(_reserve(req)) <= room < _reserve(req), (req.stage, room)
    return _reserve(req) if room is None else room


def _reference_size(traj) -> int:
    """The largest prompt + reply budget of an unbudgeted run, with the same fake tokenizer."""
    judge = ScriptedJudge()
    asyncio.run(verify(traj, VerifierConfig(), judge=judge))
    b = _budget(10**9, per=4)
    return max(_sent_tokens(b, r.messages) + _reserve(r) for r in judge.requests)


def test_pipeline_shrinks_to_fit_and_records_what_it_cut() -> None:
    traj = _long_traj()
    largest = _reference_size(traj)
    judge, _ = _judge(largest - 6000)  # 6,000 tokens short for the largest call as built
    result = asyncio.run(verify(traj, VerifierConfig(), judge=judge))
    budget = _budget(judge.served.context_tokens, per=4)
    for req in judge.requests:  # every call fits with the reply room it was sent with
        assert _sent_tokens(budget, req.messages) + _room(req) <= budget.context, req.stage
    h = result.history
    assert h.context_tokens == budget.context and h.trims, h
    cut = [t for t in h.trims if t.cuts]
    assert cut and all(t.cuts == [s for s in STEPS if s in t.cuts] and t.tokens_after < t.tokens_before for t in cut)
    assert cut[0].cuts[0] == "compress_thoughts" and h.thoughts != "full"
    assert all(t.reply_tokens is not None for t in h.trims if not t.cuts)  # a trim is a cut or a smaller room


def test_a_prompt_slightly_too_long_for_the_whole_reserve_is_sent_uncut_with_less_reply_room() -> None:
    """1,500 tokens short: within what the replies' floors give up, so no history is cut."""
    traj = _long_traj()
    largest = _reference_size(traj)
    judge, _ = _judge(largest - 1500)
    result = asyncio.run(verify(traj, VerifierConfig(), judge=judge))
    budget = _budget(judge.served.context_tokens, per=4)
    lowered = [r for r in judge.requests if r.sampling is not None and r.sampling.reply_room is not None]
    assert lowered
    for req in judge.requests:
        assert _sent_tokens(budget, req.messages) + _room(req) <= budget.context, req.stage
    h = result.history
    assert h.trims and all(t.cuts == [] and t.reply_tokens is not None for t in h.trims), h.trims
    assert h.thoughts == "full"


def test_every_text_a_call_sends_is_counted_the_limits_line_included() -> None:
    """One token short for the largest call as sent: the budget must see the whole call (the
    per-field limits line `Run.ask` appends included) to know it must shrink it."""
    traj = _long_traj()
    largest = _reference_size(traj)
    judge, _ = _judge(largest - 1)
    result = asyncio.run(verify(traj, VerifierConfig(), judge=judge))
    budget = _budget(largest - 1, per=4)
    assert any("Reply length limits" in t.text for r in judge.requests for t in r.messages[1].content if t.type == "text")
    for req in judge.requests:
        assert _sent_tokens(budget, req.messages) + _room(req) <= budget.context, req.stage
    assert result.history.trims


def test_pipeline_refuses_a_call_that_cannot_fit_without_sending_it() -> None:
    traj = _long_traj(8)
    judge, _ = _judge(4096)  # the system prompt alone is larger
    with pytest.raises(ContextOverflowError) as err:
        asyncio.run(verify(traj, VerifierConfig(), judge=judge))
    assert judge.requests == [] and "--max-model-len" in str(err.value)


def test_no_context_known_means_no_budget() -> None:
    traj = _long_traj(8)
    result = asyncio.run(verify(traj, VerifierConfig(), judge=ScriptedJudge()))
    assert result.history.context_tokens is None and result.history.trims == []


def test_the_reserve_is_the_reply_that_can_come_back_not_a_larger_floor() -> None:
    from verifier.schemas import Outcome, RubricDraft

    worst = reply_token_budget(json_schema_for(Outcome), floor=1, cap=10**6)
    assert reply_reserve(Outcome, 8192) == worst < 8192  # a valid reply cannot be longer
    assert reply_reserve(Outcome, 500) == 500  # max_tokens below the worst case: that is all it gets
    assert reply_reserve(RubricDraft, 8192) <= 8192


def test_a_run_whose_bare_history_cannot_fit_is_refused_before_any_call() -> None:
    """Issue 38 §8: every action line is kept (H1), so a run whose history without a single thought
    overflows the context can never be judged; it is refused before the rubric and relevance calls,
    not after them."""
    from verifier.rendering import shared_context, system_prompt

    traj = make_traj([["red", "green"][i % 2] for i in range(400)], thoughts=["t" * 50] * 400)
    b = _budget(10**9, per=4)
    core = b.prompt_tokens(Parts(system_prompt(None).text, shared_context(traj, VerifierConfig(), None, cut=3),
                                 "", "", []))
    judge, _ = _judge(core - 1)
    with pytest.raises(ContextOverflowError) as err:
        asyncio.run(verify(traj, VerifierConfig(), judge=judge))
    assert judge.requests == [] and err.value.stage == "history" and "every thought" in str(err.value)
    # its neighbour: a context that holds the bare history and a little more is not refused up front
    judge, _ = _judge(core + 20_000)
    try:
        asyncio.run(verify(traj, VerifierConfig(), judge=judge))
    except ContextOverflowError as exc:
        assert exc.stage != "history"
    assert judge.requests
