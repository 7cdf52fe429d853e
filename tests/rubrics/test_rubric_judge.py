"""A separate rubric judge (issue 36 §4): used when no file provides the rubric, named in the result."""
from __future__ import annotations

import argparse

from rubric_helpers import make_traj

from verifier.options import add_scoring_args, settings_overrides
from verifier.pipeline import verify
from verifier.testing import ScriptedJudge


async def test_the_rubric_judge_writes_the_rubric_and_the_scorer_scores():
    scorer, writer = ScriptedJudge(model="small"), ScriptedJudge(model="big")
    res = await verify(make_traj(), judge=scorer, rubric_judge=writer)
    assert writer.stages() == ["rubric"] and "rubric" not in scorer.stages() and scorer.requests_for("outcome")
    assert res.rubric_source.kind == "generated" and res.rubric_source.model == "big"
    plain = await verify(make_traj(), judge=scorer)
    assert plain.rubric_source.model == "small" and plain.rubric_source.rubric_sha256


def test_flags_become_settings(tmp_path):
    p = argparse.ArgumentParser()
    add_scoring_args(p, default_concurrency=4)
    args = p.parse_args(["--rubrics", "r.jsonl", "--rubrics-only", "--rubric-judge-url", "http://127.0.0.1:9/v1",
                         "--rubric-model", "big", "--judge-url", "http://127.0.0.1:8/v1", "--model", "small"])
    got = settings_overrides(args)
    assert got["rubrics"].endswith("/r.jsonl") and got["rubrics_only"] is True
    assert got["rubric_judge"] == {"base_urls": ["http://127.0.0.1:9/v1"], "model": "big"}
    assert got["judge"]["model"] == "small"
