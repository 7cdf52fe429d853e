"""The final answer is capped like every other field (issue 14, defect 10).

A 5 MB answer used to be repeated whole in ~9 calls (~47 MB of prompt text). Now the judge sees
at most `max_final_answer_chars` of it (head and tail, the middle elided) and the result says so.
"""
from __future__ import annotations

import io

import pytest
from PIL import Image

from verifier.baselines.webvoyager import verify_webvoyager
from verifier.config import VerifierConfig
from verifier.judge.base import ImagePart
from verifier.pipeline import verify
from verifier.result import RESULT_SCHEMA_VERSION, VerificationResult
from verifier.testing import ScriptedJudge
from verifier.trajectory import Screenshot, Step, Task, Trajectory

HEAD, TAIL = "HEAD-OF-ANSWER ", " TAIL-OF-ANSWER"
BIG = HEAD + "x" * 5_000_000 + TAIL  # 5 MB


def traj(answer: str | None) -> Trajectory:
    buf = io.BytesIO()
    Image.new("RGB", (16, 12), "red").save(buf, format="PNG")
    return Trajectory(task=Task(id="t", instruction="Report the price"),
                      steps=[Step(index=1, action="answer", arguments={"text": "see answer"})],
                      screenshots=[Screenshot.from_bytes(buf.getvalue(), step=1)], final_answer=answer)


def texts(judge: ScriptedJudge) -> list[str]:
    return ["\n".join(p.text for p in r.messages[1].content if not isinstance(p, ImagePart))
            for r in judge.requests]


@pytest.mark.parametrize("cap", [None, 1000])
async def test_judge_receives_the_capped_answer_and_the_result_records_the_cut(cap):
    cfg = VerifierConfig() if cap is None else VerifierConfig(max_final_answer_chars=cap)
    limit = cfg.max_final_answer_chars
    assert 4000 <= VerifierConfig().max_final_answer_chars <= 8000
    judge = ScriptedJudge()
    res = await verify(traj(BIG), cfg, judge=judge)
    with_answer = [t for t in texts(judge) if HEAD in t]
    assert len(with_answer) >= 5  # the answer is in every call that sees the trajectory...
    for t in with_answer:  # ...cut to the cap, head and tail kept
        assert TAIL in t and "chars cut" in t and len(t) < limit + 20_000
    assert [(x.field, x.original_chars) for x in res.truncations] == [("final_answer", len(BIG))]
    assert res.truncations[0].kept_chars <= limit + 40
    assert res.schema_version == RESULT_SCHEMA_VERSION == "1.4"
    back = VerificationResult.model_validate_json(res.model_dump_json())
    assert back.truncations == res.truncations


async def test_short_answers_are_untouched_and_nothing_is_recorded():
    judge = ScriptedJudge()
    res = await verify(traj("The price is $5."), judge=judge)
    assert res.truncations == []
    assert any("| The price is $5." in t for t in texts(judge))
    res = await verify(traj(None), judge=ScriptedJudge())
    assert res.truncations == []


async def test_baseline_caps_the_answer_too():
    judge = ScriptedJudge({"webvoyager": lambda m, o: {"reasoning": "r", "verdict": "NOT SUCCESS"}})
    res = await verify_webvoyager(traj(BIG), judge)
    (text,) = texts(judge)
    assert HEAD in text and TAIL in text and len(text) < VerifierConfig().max_final_answer_chars + 5000
    assert [t.field for t in res.truncations] == ["final_answer"]


def test_cap_is_validated():
    with pytest.raises(ValueError):
        VerifierConfig(max_final_answer_chars=10)
