"""The stationarity benchmark (issue 36 §6): a rubric file removes the rubric's share of the
across-run spread of the process score; with a noiseless scorer nothing is left."""
from __future__ import annotations

from verifier.perf.stationarity import measure, report


async def test_the_file_removes_the_rubric_share_of_the_variance():
    spread = await measure(runs=5, n=4)
    assert spread.variance_removed > 0.5
    assert "removes" in report(spread, 5)


async def test_with_a_noiseless_scorer_the_file_leaves_no_spread():
    spread = await measure(runs=4, n=3, score_noise=0.0)
    assert max(spread.from_file) == 0.0 < max(spread.generated)
