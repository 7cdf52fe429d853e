"""WebJudge (Online-Mind2Web) as a baseline: key points, per-screenshot relevance, one judgment.

Published method (Xue et al., Online-Mind2Web; reference doc section 7.1), three rounds:
1. key points: the task's explicit requirements (1 text call);
2. each screenshot scored 1-5 for how much evidence it carries (M calls, in parallel);
3. the screenshots scoring >= 3 (at most 50), with the reason each matters, go with the task, key
   points, actions and final answer into one final success/failure judgment.

Robustness changes, not changes of judgement: constrained JSON replies instead of regex parsing
("unsuccessful" can no longer read as success); byte-identical screenshots are scored once; a failed
per-screenshot call leaves that screenshot out and is listed in `result.degraded` instead of
silently scoring 0; when more than 50 qualify we keep the 50 highest (later ones win ties) and
show them in chronological order, rather than the first 50.
"""
from __future__ import annotations

import asyncio
import time
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from ..errors import JudgeError
from ..judge.base import ImagePart, Judge, Message, Sampling, TextPart
from ..prompts import render
from ..result import DegradedStage, RelevanceResult
from ..trajectory import Trajectory
from ._common import Ledger, action_history, build_result, fence, final_answer_text, record

NAME = "webjudge"
SCORE_THRESHOLD = 3
MAX_IMAGES = 50


class KeyPoints(BaseModel):
    key_points: list[Annotated[str, Field(max_length=300)]] = Field(
        min_length=1, max_length=12, description="Explicit requirements of the task, one per item.")


class ScreenshotRelevance(BaseModel):
    description: str = Field(max_length=1500, description="What the screenshot shows that bears on the task.")
    reasoning: str = Field(max_length=1500, description="Which key points it confirms or refutes, and why.")
    score: int = Field(ge=1, le=5, description="1 = nothing relevant ... 5 = clearly shows the required result.")


class Judgment(BaseModel):
    thoughts: str = Field(max_length=5000, description="Check every key point against the evidence.")
    status: Literal["success", "failure"]


def select_screenshots(scores: dict[int, int], *, threshold: int = SCORE_THRESHOLD,
                       cap: int = MAX_IMAGES) -> list[int]:
    """Screenshot numbers scoring >= threshold; the `cap` best (later wins ties), chronological."""
    kept = [k for k, s in scores.items() if s >= threshold]
    best = sorted(kept, key=lambda k: (scores[k], k), reverse=True)[:cap]
    return sorted(best)


async def verify_webjudge(traj: Trajectory, judge: Judge, *, threshold: int = SCORE_THRESHOLD,
                          max_images: int = MAX_IMAGES, sampling: Sampling | None = None):
    """Score `traj` with WebJudge; returns a `VerificationResult` (outcome only).

    Raises `JudgeError` if the key-point or the final call fails, or if every screenshot call fails.
    """
    ledger, started = Ledger(), time.perf_counter()
    task = traj.task.instruction

    # 1. key points (text only)
    ks, ku = render("baselines/webjudge_keypoints.system.j2"), render("baselines/webjudge_keypoints.user.j2",
                                                                        task=task)
    reply = await judge.complete([Message.system(ks.text), Message.user(ku.text)], KeyPoints,
                                 stage="webjudge_keypoints", sampling=sampling)
    record(ledger, "webjudge_keypoints", reply, round_no=1, infos=(ks.info, ku.info))
    key_points = [" ".join(k.split())[:300] for k in reply.parsed.key_points if k.strip()]

    # 2. one relevance call per distinct screenshot, in parallel
    m = len(traj.screenshots)
    groups = traj.distinct_screenshots()  # hash -> [numbers]; first number is the representative
    ss = render("baselines/webjudge_screenshot.system.j2")

    async def rate(first: int) -> ScreenshotRelevance | None:
        user = render("baselines/webjudge_screenshot.user.j2", task=task, key_points=key_points,
                      label=f"screenshot {first} of {m}")
        msg = Message.user(user.text, ImagePart(screenshot=traj.screenshots[first - 1],
                                                label=f"Screenshot {first} of {m}"))
        try:
            r = await judge.complete([Message.system(ss.text), msg], ScreenshotRelevance,
                                     stage="webjudge_relevance", sampling=sampling)
        except JudgeError as exc:
            record(ledger, "webjudge_relevance", None, round_no=2, failed=True, usage=exc.usage,
                   infos=(ss.info, user.info))
            failures.append(f"screenshot {first}: {type(exc).__name__}: {exc}"[:300])
            return None
        record(ledger, "webjudge_relevance", r, round_no=2, infos=(ss.info, user.info))
        return r.parsed

    failures: list[str] = []
    reps = [nums[0] for nums in groups.values()]
    rated = dict(zip(reps, await asyncio.gather(*(rate(k) for k in reps))))
    if m and all(v is None for v in rated.values()):
        raise JudgeError(f"all {len(reps)} screenshot relevance calls failed; first: {failures[0]}",
                         stage="webjudge_relevance")
    per_shot: dict[int, ScreenshotRelevance | None] = {}
    for nums in groups.values():
        for k in nums:
            per_shot[k] = rated[nums[0]]
    scores = {k: v.score for k, v in per_shot.items() if v is not None}
    kept = select_screenshots(scores, threshold=threshold, cap=max_images)

    # 3. final judgment with the kept screenshots
    js = render("baselines/webjudge_judgment.system.j2")
    ju = render("baselines/webjudge_judgment.user.j2", task=task, key_points=key_points,
                history=fence(action_history(traj)), final_answer=fence(final_answer_text(traj)),
                kept=[{"label": f"Screenshot {k} of {m}", "reasoning": "\n" + fence(shot.reasoning)}
                      for k in kept if (shot := per_shot[k]) is not None])  # each block on its own lines: its tags are the only line starts it has
    parts: list[TextPart | ImagePart] = [TextPart(text=ju.text)]
    parts += [ImagePart(screenshot=traj.screenshots[k - 1], label=f"Screenshot {k} of {m}") for k in kept]
    final = await judge.complete([Message.system(js.text), Message(role="user", content=parts)], Judgment,
                                 stage="webjudge_judgment", sampling=sampling)
    record(ledger, "webjudge_judgment", final, round_no=3, infos=(js.info, ju.info))

    relevance = RelevanceResult(criteria=["webjudge_relevance"],
                                matrix=[[per_shot[k].score] if per_shot.get(k) else None for k in range(1, m + 1)],
                                duplicates=[nums for nums in groups.values() if len(nums) > 1])
    degraded = [DegradedStage(stage="webjudge_relevance", reason=f"{len(failures)} screenshot call(s) failed: "
                              + "; ".join(failures)[:1500])] if failures else []
    return build_result(traj, verifier=NAME, success=final.parsed.status == "success",
                        reasoning=final.parsed.thoughts, ledger=ledger,
                        wall_s=time.perf_counter() - started, relevance=relevance,
                        topk={"webjudge_relevance": kept}, degraded=degraded,
                        options={"threshold": threshold, "max_images": max_images, "key_points": key_points})
