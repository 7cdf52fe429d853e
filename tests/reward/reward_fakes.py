"""Module-level fakes for the reward tests (module-level so they pickle by reference)."""
from __future__ import annotations

import asyncio
import json
import os

from verifier.errors import JudgeUnavailableError

CALLS: list[str] = []  # task ids verified, in order
KEYS: list[str] = []  # rollout content keys verified, in order
FAIL_TASKS: set[str] = set()
SEEN: list[str] = []  # every rollout TRL handed `record_rollouts`, canonical JSON


def record_rollouts(prompts, completions, task_id=None, **kwargs):
    """A zero-weight reward beside the verifier's: records what TRL scored, so a test can count
    the distinct rollouts exactly (and check the verifier ran once for each of them)."""
    ids = task_id or [None] * len(completions)
    SEEN.extend(json.dumps([t, p, c], sort_keys=True, default=str) for t, p, c in zip(ids, prompts, completions))
    return [0.0] * len(completions)


async def fake_verify(trajectory, config=None, *, judge, cache=None):
    """Stands in for verifier.pipeline.verify: score = steps/10, success if an answer was given."""
    from verifier.session import rollout_key

    if isinstance(judge, FakeJudge):
        assert judge.loop is asyncio.get_running_loop(), "judge used on a loop it was not built on"
    CALLS.append(trajectory.task.id)
    KEYS.append(rollout_key(trajectory))
    # a real suspension, so concurrent callers really overlap (longer in the subprocess kill test)
    await asyncio.sleep(float(os.environ.get("FAKE_VERIFY_SLEEP", "0.01")))
    if trajectory.task.id in FAIL_TASKS:
        raise JudgeUnavailableError("connection refused", stage="rubric")
    return {"task_id": trajectory.task.id, "process_score": min(len(trajectory.steps) / 10, 1.0),
            "outcome_success": trajectory.final_answer is not None,
            "grounded": bool(trajectory.screenshots),
            "outcome_reasoning": f"answer={trajectory.final_answer!r}",
            "diagnosis": {"first_failure_step": 2},
            "degraded": [],
            "usage": {"calls": 4, "prompt_tokens": 100, "completion_tokens": 20, "latency_s": 0.5}}


class FakeJudge:
    """Remembers the event loop it was built on, like an HTTP client bound to its loop."""

    def __init__(self):
        self.loop = asyncio.get_running_loop()

    async def aclose(self):
        pass


def fake_judge():
    return FakeJudge()


SCRIPTED = None  # the ScriptedJudge a test installed; scripted_judge() hands it to every loop


def scripted_judge():
    """judge_factory for the real pipeline: the test's shared ScriptedJudge (so requests can be counted)."""
    assert SCRIPTED is not None, "install reward_fakes.SCRIPTED first"
    return SCRIPTED


async def broken_verify(trajectory, config=None, *, judge, cache=None):
    """A pipeline bug (not a verifier error)."""
    raise ZeroDivisionError("bug")


def call_in_child(payload: bytes) -> list:
    """Run in a spawned process, like TRL's async GRPO rollout worker: unpickle, then call once."""
    import pickle

    from verifier.trajectory import Task  # noqa: F401  (the child imports everything itself)

    func = pickle.loads(payload)
    prompts = [[{"role": "user", "content": "Book a flight"}]] * 2
    completions = [[{"role": "assistant", "content": "done"}], [{"role": "assistant", "content": "not yet"}]]
    return asyncio.run(func(prompts, completions, completion_ids=[[1], [2]], task_id=["g", "g"]))


async def slow_broken_verify(trajectory, config=None, *, judge, cache=None):
    CALLS.append(trajectory.task.id)
    await asyncio.sleep(0.01)
    raise ZeroDivisionError("bug")
