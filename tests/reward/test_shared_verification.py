"""A follower's deadline never cancels the verification it shares (issue 38 §10).

Two rewards (process and outcome), or two ranks through the service, ask for the same rollout: the
second awaits the first's in-flight verification. Awaiting it without `asyncio.shield` let the
follower's own deadline cancel the leader's work: the leader, with time to spare, lost its score.
No test noticed.
"""
from __future__ import annotations

import asyncio

import reward_fakes

from verifier.errors import JudgeDeadlineError
from verifier.session import VerifierSession
from verifier.settings import RewardSettings
from verifier.trajectory import Step, Task, Trajectory


def _traj() -> Trajectory:
    return Trajectory(task=Task(id="shared", instruction="Find the price"),
                      steps=[Step(index=1, action="click")], final_answer="$5")


async def test_a_followers_deadline_leaves_the_leaders_verification_running(monkeypatch):
    monkeypatch.setenv("FAKE_VERIFY_SLEEP", "0.3")  # the verification takes 0.3 s
    session = VerifierSession(RewardSettings(verify_fn=reward_fakes.fake_verify, judge_factory=reward_fakes.fake_judge,
                                             cache_factory=None))
    try:
        loop = asyncio.get_running_loop()
        leader = asyncio.ensure_future(session.verify(_traj()))  # no deadline of its own
        await asyncio.sleep(0.02)  # the leader's verification is in flight
        follower = await session.verify(_traj(), deadline=loop.time() + 0.05)
        assert isinstance(follower.error, JudgeDeadlineError)  # the follower's own time ran out ...
        led = await leader
        assert led.ok and led.result["process_score"] == 0.1  # ... the leader's work did not
        assert session.runs == 1
        again = await session.verify(_traj())  # and its result is kept for the next caller
        assert again.ok and session.runs == 1
    finally:
        await session.aclose()
