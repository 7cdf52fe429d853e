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
