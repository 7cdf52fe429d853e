"""The two judgements a run may carry besides the verifier's: the agent's own claim and the
environment's programmatic score. They live in `Trajectory.metadata` under the fixed keys below.

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
