"""The wire schema of the reward service (requests and answers), one pydantic model each.

`POST /v1/verify` answers the `VerificationResult` itself (200) or an `ErrorBody` with a status
that says whose fault it is: 422 bad trajectory, 502 judge answered unusably, 504 deadline, 500 a
bug, 429 queue full / 503 shutting down or judge unreachable: all three with Retry-After. The batch form answers one `ItemResult`
per trajectory, in order, because one bad rollout must not fail its neighbours.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trajectory: dict[str, Any] = Field(description="a native trajectory record (Trajectory JSON)")
    deadline_s: float | None = Field(default=None, gt=0, description="seconds this request may take")
    rubric: dict[str, Any] | None = Field(default=None, description=(
        "the rubric to score against: a rubric file's line or a bare rubric (docs/rubrics.md); wins over --rubrics"))


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trajectories: list[dict[str, Any]] = Field(min_length=1)
    deadline_s: float | None = Field(default=None, gt=0)
    rubrics: list[dict[str, Any] | None] | None = Field(default=None, description=(
        "one rubric (or null) per trajectory, in order, as VerifyRequest.rubric"))

    @model_validator(mode="after")
    def _one_rubric_each(self) -> BatchRequest:
        if self.rubrics is not None and len(self.rubrics) != len(self.trajectories):
            raise ValueError(f"rubrics: {len(self.rubrics)} given for {len(self.trajectories)} trajectories "
                             "(one each, or null)")
        return self


class ItemResult(BaseModel):
    status: Literal["scored", "unscored"]
    result: dict[str, Any] | None = None
    error_type: str | None = None
    reason: str | None = None
    http_status: int = 200  # what the single endpoint would have answered
    retry_after: int | None = None  # seconds, with a 503: the judge is down (probed again then) or shutdown


class BatchResponse(BaseModel):
    results: list[ItemResult]


class ErrorDetail(BaseModel):
    type: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


class OpenRLHFRequest(BaseModel):
    """OpenRLHF's remote reward-model body: `{"query": [...], "prompts": [...], "labels": [...]}`."""

    query: list[str] = Field(min_length=1)
    prompts: list[str] | None = None
    labels: list[Any] | None = None
