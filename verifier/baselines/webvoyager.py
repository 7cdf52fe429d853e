"""The WebVoyager judge as a baseline: one multimodal call, one verdict.

Published method (He et al., WebVoyager; reference doc section 7.2): the judge sees the task, the
agent's final response and the last N screenshots, and answers SUCCESS or NOT SUCCESS. It has no
rubric, no per-screenshot selection and never sees the actions, which is why its false-positive
rate is high; we keep it that way on purpose, since it is a yardstick.

Our differences from the published code, all in the direction of robustness, none in judgement:
the verdict is a constrained JSON enum (no substring parsing, so no "unparseable counts as pass"),
the trajectory text is fenced as untrusted, and identical consecutive frames are sent once.
"""
from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, Field

from ..judge.base import ImagePart, Judge, Message, Sampling, TextPart
from ..prompts import render
from ..trajectory import Trajectory
from ._common import Ledger, build_result, fence, final_answer_text, record

NAME = "webvoyager"
#: webeval's port sends the last 30 screenshots; the original script defaulted to the last one.
DEFAULT_LAST_N = 30


class WebVoyagerVerdict(BaseModel):
    """Your verdict on the agent's run."""

    # reasoning comes first so the model commits to a verdict only after explaining it
    reasoning: str = Field(max_length=4000, description="Brief justification grounded in the screenshots.")
    verdict: Literal["SUCCESS", "NOT SUCCESS"]


def _last_distinct(traj: Trajectory, n: int) -> list[int]:
    """1-based numbers of the last `n` screenshots, skipping a frame identical to its successor."""
    chosen: list[int] = []
    prev_hash = None
    for k in range(len(traj.screenshots), 0, -1):
        if len(chosen) >= n:
            break
        h = traj.screenshots[k - 1].sha256
        if h != prev_hash:
            chosen.append(k)
        prev_hash = h
    return sorted(chosen)


async def verify_webvoyager(traj: Trajectory, judge: Judge, *, last_n: int = DEFAULT_LAST_N,
                            sampling: Sampling | None = None):
    """Score `traj` with the WebVoyager judge; returns a `VerificationResult` (outcome only).

    Raises `JudgeError` when the single call fails: a baseline with no verdict is unscored, not failed.
    """
    if last_n < 1:
        raise ValueError("last_n must be >= 1")
    ledger, started = Ledger(), time.perf_counter()
    shown = _last_distinct(traj, last_n)
    system = render("baselines/webvoyager.system.j2")
    user = render("baselines/webvoyager.user.j2", task=traj.task.instruction,
                  final_answer=fence(final_answer_text(traj)), n_shown=len(shown),
                  n_total=len(traj.screenshots))
    m = len(traj.screenshots)
    parts: list[TextPart | ImagePart] = [TextPart(text=user.text)]
    parts += [ImagePart(screenshot=traj.screenshots[k - 1], label=f"Screenshot {k} of {m}") for k in shown]
    messages = [Message.system(system.text), Message(role="user", content=parts)]
    reply = await judge.complete(messages, WebVoyagerVerdict, stage="webvoyager", sampling=sampling)
    record(ledger, "webvoyager", reply, round_no=1, infos=(system.info, user.info))
    verdict = reply.parsed
    return build_result(traj, verifier=NAME, success=verdict.verdict == "SUCCESS", reasoning=verdict.reasoning,
                        ledger=ledger, wall_s=time.perf_counter() - started, options={"last_n": last_n, "screenshots_shown": shown})
