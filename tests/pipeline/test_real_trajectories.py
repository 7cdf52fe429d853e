"""The two real sample formats scored end to end with the scripted judge."""
from pipeline_helpers import relevance_by, shot_of

from verifier import loaders
from verifier.config import VerifierConfig
from verifier.pipeline import expected_calls, verify
from verifier.result import VerificationResult
from verifier.testing import ScriptedJudge


async def test_fara_alltrails_end_to_end(shared_data):
    traj = loaders.load_trajectory(shared_data / "trajectories" / "fara-alltrails-find-23")
    # relevance like the reference run: screenshot 1 is the empty search page, later ones the answer
    judge = ScriptedJudge({"relevance": relevance_by(lambda s, c: 0 if s == 1 else 9)})
    res = await verify(traj, judge=judge)
    assert res.task_id == "alltrails_find_23"
    assert len(res.relevance.matrix) == 4 and res.relevance.duplicates == [[3, 4]]
    assert res.relevance.matrix[0] == [0, 0] and res.relevance.matrix[3] == [9, 9]
    assert res.topk == {"c1": [4, 2], "c2": [4, 2]}  # 3 == 4 analysed once; 1 scores 0
    assert len(judge.requests_for("relevance")) == 3
    assert sorted(shot_of(r.messages) for r in judge.requests_for("evidence")) == [2, 4]
    assert res.usage.calls == expected_calls(distinct=3, analysed=2, config=VerifierConfig())
    history = judge.text(judge.requests_for("evidence")[0])
    assert "1. input_text" in history and "Massacre Falls" in history  # compact steps + final answer
    assert "\\u2019" not in history  # no ASCII-escaped JSON
    assert VerificationResult.model_validate_json(res.model_dump_json()) == res


async def test_online_mind2web_end_to_end(shared_data):
    traj = loaders.load_trajectory(shared_data / "trajectories" / "om2w-fb7b4f784cfde003e2548fdf4e8d6b4f")
    judge = ScriptedJudge()
    res = await verify(traj, judge=judge)
    m = len(traj.screenshots)
    assert len(res.relevance.matrix) == m and all(row == [5, 5] for row in res.relevance.matrix)
    distinct = len(traj.distinct_screenshots())
    assert len(judge.requests_for("relevance")) == distinct
    assert all(len(g) == min(5, distinct) for g in res.topk.values())
    assert "Discogs" in judge.text(judge.requests_for("rubric")[0])
    assert res.outcome_success and res.process_score == 1.0 and res.degraded == []
