"""Stage-cache keys include the judge: a rubric or relevance row written by one judge model is
never served to another (issue 14, section 3: a mutant dropping the judge from the keys survived)."""
from __future__ import annotations

import io

from PIL import Image

from verifier.cache import StageCache
from verifier.pipeline import verify
from verifier.testing import ScriptedJudge
from verifier.trajectory import Screenshot, Step, Task, Trajectory


def traj() -> Trajectory:
    shots = []
    for i, color in enumerate(["red", "green"], start=1):
        buf = io.BytesIO()
        Image.new("RGB", (24, 16), color).save(buf, format="PNG")
        shots.append(Screenshot.from_bytes(buf.getvalue(), step=i))
    return Trajectory(task=Task(id="t", instruction="Find the price of the blue mouse"),
                      steps=[Step(index=i, action="click") for i in (1, 2)], screenshots=shots,
                      final_answer="$5")


async def test_rubric_and_relevance_rows_are_cached_per_judge_model():
    cache = StageCache()
    first_a, b, second_a = ScriptedJudge(model="judge-a"), ScriptedJudge(model="judge-b"), ScriptedJudge(model="judge-a")
    for judge in (first_a, b, second_a):
        await verify(traj(), judge=judge, cache=cache)
    asked = [(len(j.requests_for("rubric")), len(j.requests_for("relevance"))) for j in (first_a, b, second_a)]
    # judge-b writes its own rubric and rows; a second judge-a client reuses judge-a's
    assert asked == [(1, 2), (1, 2), (0, 0)]  # one relevance row per screenshot


async def test_a_joiner_with_time_left_recomputes_what_the_starters_deadline_ended():
    """A shared computation runs under the deadline of the caller that started it; when that
    deadline ends it, a caller that joined with time of its own left computes it again rather
    than inheriting someone else's JudgeDeadlineError (the next reward batch joining the rubric
    call of the previous one)."""
    import asyncio

    import pytest

    from verifier.errors import JudgeDeadlineError
    from verifier.judge.deadline import deadline_in, time_left

    cache, started = StageCache(), []

    async def rubric():
        started.append(time_left())
        await asyncio.sleep(0.3)
        if time_left() <= 0:
            raise JudgeDeadlineError("time budget spent", stage="rubric")
        return "the rubric"

    async def caller(budget: float):
        with deadline_in(budget):
            return await cache.get_or_compute("rubric", "task", rubric)

    short = asyncio.ensure_future(caller(0.1))
    await asyncio.sleep(0.02)
    joiner = asyncio.ensure_future(caller(5.0))
    with pytest.raises(JudgeDeadlineError):
        await short
    assert await joiner == ("the rubric", False)  # computed again, under its own budget
    assert len(started) == 2 and started[0] < 0.2 < started[1]
    assert await caller(0.1) == ("the rubric", True)  # and then cached for everyone


async def test_max_entries_evicts_the_least_recently_used_and_keeps_the_newest():
    """Issue 20 R4b: a full cache drops its oldest entry (a hit refreshes one), never the one just
    stored, or a long run would pay the newest rubric again on its very next rollout."""
    from verifier.cache import StageCache

    cache = StageCache(max_entries=2)
    calls: list[str] = []

    def make(value: str):
        async def compute():
            calls.append(value)
            return value
        return compute

    for key in ("a", "b"):
        await cache.get_or_compute("rubric", key, make(key))
    assert (await cache.get_or_compute("rubric", "a", make("a")))[1]  # a hit: "a" is now the newest
    await cache.get_or_compute("rubric", "c", make("c"))  # full: evicts "b", the least recently used
    assert len(cache) == 2 and cache.ready("rubric", "c") and cache.ready("rubric", "a")
    assert not cache.ready("rubric", "b")
    assert calls == ["a", "b", "c"]
