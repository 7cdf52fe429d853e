"""The judgements a run may carry besides the verifier's: the agent's own claim, the environment's
programmatic score, and the verdict of the agent framework's own LLM judge (browser-use's
`ActionResult.judgement`). They live in `Trajectory.metadata` under the fixed keys below.

Why a module of their own: loaders write them, `inspect`, the viewer and `bench --env-agreement`
read them, and no verification stage may (the judge never sees them), so they are defined once,
apart from the task the rubric is written from.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

#: Fixed `Trajectory.metadata` keys for the two judgements a run may carry besides the verifier's.
#: They are recorded for comparison only (inspect, viewer, `bench --env-agreement`) and never read
#: by any verification stage, so neither can leak into or stand in for the verifier's verdict.
AGENT_CLAIM = "agent_claim"
ENV_SCORE = "env_score"
FRAMEWORK_JUDGE = "framework_judge"


class AgentClaim(BaseModel):
    """What the agent said about its own run (browser-use `success`, a `DONE` / `FAIL` action)."""

    model_config = ConfigDict(extra="forbid")

    success: bool | None = None  # None: the agent stopped without saying
    source: str = Field(min_length=1, description="Where the claim was read, e.g. 'browser-use result.success'.")


class EnvScore(BaseModel):
    """The environment's programmatic score (BrowserGym `cum_reward`, OSWorld `result.txt`).

    `success` is `score >= 1.0` (both harnesses score a solved task 1). An environment score is not
    always task success: it is whatever the task's checker tests (in a security benchmark, 1.0 can
    mean the attack worked).
    """

    model_config = ConfigDict(extra="forbid")

    score: float
    success: bool
    source: str = Field(min_length=1, description="Where the score was read, e.g. 'OSWorld result.txt'.")

    @classmethod
    def of(cls, score: float, source: str) -> EnvScore:
        return cls(score=float(score), success=float(score) >= 1.0, source=source)


class FrameworkJudgement(BaseModel):
    """The agent framework's own LLM judge on the run (browser-use 0.8+: `ActionResult.judgement`
    on the final result: `verdict`, `reasoning`, `failure_reason`, `impossible_task`, `reached_captcha`).

    Why it is kept and never shown: it is a second model's opinion, useful to compare with (bench
    `--env-agreement`), but text a judge could anchor on, and it came in the untrusted trajectory.
    """

    model_config = ConfigDict(extra="forbid")

    verdict: bool | None = None
    reasoning: str | None = None
    failure_reason: str | None = None
    impossible_task: bool | None = None
    reached_captcha: bool | None = None
    source: str = Field(min_length=1, description="Where it was read, e.g. 'browser-use result.judgement'.")
