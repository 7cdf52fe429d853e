"""The sharing rule on its own (issue 37 §3): one request key per distinct request and repeat, a
seed of its own per repeat for seeded calls, a shared reply marked as a cache hit and never aliased."""
from __future__ import annotations

import asyncio

from pipeline_helpers import png

from verifier.cache import StageCache
from verifier.experiment.sharing import (
    REPEAT_SEED_STRIDE,
    SharedCallsJudge,
    Tally,
    repeat_sampling,
    request_key,
)
from verifier.judge.base import ImagePart, Message, Sampling, TextPart
from verifier.schemas import Outcome
from verifier.testing import ScriptedJudge
from verifier.trajectory import Screenshot


def msgs(text: str = "judge this", color: str = "red") -> list[Message]:
    return [Message.system("principles"), Message(role="user", content=[
        TextPart(text=text), ImagePart(screenshot=Screenshot.from_bytes(png(color), step=1), label="Screenshot 1")])]


def test_the_key_changes_with_the_repeat_and_with_anything_sent_but_not_with_equal_requests():
    k = request_key("j", 0, "outcome", msgs(), Outcome, None)
    assert k == request_key("j", 0, "outcome", msgs(), Outcome, None)
    others = [request_key("j", 1, "outcome", msgs(), Outcome, None),
              request_key("j2", 0, "outcome", msgs(), Outcome, None),
              request_key("j", 0, "evidence", msgs(), Outcome, None),
              request_key("j", 0, "outcome", msgs("judge that"), Outcome, None),
              request_key("j", 0, "outcome", msgs(color="blue"), Outcome, None),
              request_key("j", 0, "outcome", msgs(), Outcome, Sampling(seed=3))]
    assert len({k, *others}) == 1 + len(others)


def test_seeded_calls_get_a_seed_per_repeat_and_unseeded_ones_are_left_alone():
    seeded = Sampling(temperature=0.7, seed=1001)
    assert repeat_sampling(seeded, None, 0) is seeded
    assert repeat_sampling(seeded, None, 2).seed == 1001 + 2 * REPEAT_SEED_STRIDE
    assert repeat_sampling(None, Sampling(seed=5), 1).seed == 5 + REPEAT_SEED_STRIDE  # the judge's own seed
    assert repeat_sampling(None, Sampling(), 1) is None and repeat_sampling(Sampling(), None, 1) == Sampling()


def test_a_shared_reply_is_one_call_marked_cached_and_a_copy_per_caller():
    inner = ScriptedJudge()
    memo, ta, tb = StageCache(), Tally(), Tally()
    a = SharedCallsJudge(inner, memo, identity="j", repeat=0, tally=ta)
    b = SharedCallsJudge(inner, memo, identity="j", repeat=0, tally=tb)
    other_repeat = SharedCallsJudge(inner, StageCache(), identity="j", repeat=1, tally=Tally())

    async def go():
        return await asyncio.gather(a.complete(msgs(), Outcome, stage="outcome"),
                                    b.complete(msgs(), Outcome, stage="outcome"),
                                    other_repeat.complete(msgs(), Outcome, stage="outcome"))

    ra, rb, rc = asyncio.run(go())
    assert len(inner.requests) == 2  # repeat 0 once for both arms, repeat 1 its own
    assert (ta.sent, ta.shared, tb.sent, tb.shared) in ((1, 0, 0, 1), (0, 1, 1, 0))
    assert sorted([ra.usage.cached, rb.usage.cached]) == [False, True] and not rc.usage.cached
    assert ra.parsed == rb.parsed and ra.parsed is not rb.parsed
