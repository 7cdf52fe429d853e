"""Typed errors shared by every layer.

Failures are never silently turned into scores: the pipeline raises or records one of these,
the TRL boundary maps them to ``None``, offline scoring writes an ``unscored`` record.
"""
from __future__ import annotations

from typing import Any


class CuaVerifierError(Exception):
    """Base class for every error this package raises on purpose."""


class TrajectoryError(CuaVerifierError):
    """Bad trajectory input. Names the file, line and field so the user can fix the data."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.file, self.line, self.field, self.reason = file, line, field, message
        where = []
        if file:
            where.append(str(file) + (f":{line}" if line is not None else ""))
        if field:
            where.append(f"field {field!r}")
        super().__init__(f"{' '.join(where)}: {message}" if where else message)


class ScreenshotError(TrajectoryError):
    """A screenshot is missing, corrupt, or exceeds the size guards."""


class ConfigError(CuaVerifierError):
    """Invalid configuration (a bad URL, a missing model name, an inconsistent option)."""


class JudgeError(CuaVerifierError):
    """The judge could not produce a usable reply. Carries what is known about the attempts."""

    def __init__(self, message: str, *, stage: str | None = None, last_reply: str | None = None,
                 usage: Any = None) -> None:
        self.stage, self.last_reply, self.usage = stage, last_reply, usage
        super().__init__(f"[{stage}] {message}" if stage else message)


class JudgeUnavailableError(JudgeError):
    """Transport failures (timeouts, refused connections, 429/5xx) outlived the retry budget."""


class JudgeInvalidOutputError(JudgeError):
    """The judge kept answering with invalid JSON / schema violations / truncated replies."""


class JudgeTruncatedError(JudgeInvalidOutputError):
    """The last reply stopped at ``max_tokens`` (finish_reason == "length")."""


class JudgeMalformedResponseError(JudgeUnavailableError):
    """HTTP 200 whose body is not a chat completion (a proxy's HTML page, truncated JSON), after
    the transport retries: a fault of the path to the judge, not a verdict."""


class JudgeCircuitOpenError(JudgeUnavailableError):
    """Failed fast, no request sent: every endpoint's circuit breaker is open (the judge kept
    failing) and its cool-down has not elapsed. A half-open probe tests it again afterwards, in
    `retry_in_s` seconds (what a service tells its clients as Retry-After)."""

    def __init__(self, message: str, *, retry_in_s: float = 0.0, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_in_s = retry_in_s


class JudgeDeadlineError(JudgeUnavailableError):
    """A verification or reward batch ran out of its time budget before the judge finished."""


class JudgeUndecidedError(JudgeError):
    """Too few valid votes to decide a strict majority of the V votes asked for: the outcome is
    unscored, never a failure (an outage is not a verdict)."""


class RubricError(TrajectoryError):
    """A rubric given as data (a rubric file, a `rubric` column or request field) cannot be used.
    Bad input about this rollout's task (the reward service answers 422), never a judge failure."""


class RubricFileError(RubricError, ConfigError):
    """A rubric file is not valid: every problem is listed with its line, task and field
    (`verifier.rubrics.check`). A run refuses the whole file rather than score some tasks against
    a rubric nobody reviewed."""

    def __init__(self, message: str, problems: list[Any] | None = None) -> None:
        self.problems = list(problems or [])
        super().__init__(message)


class RubricMismatchError(RubricError):
    """The rubric on file for a task id was written for another instruction (its hash differs):
    scoring against it would grade the attempt against someone else's task."""


class RubricMissingError(RubricError):
    """`--rubrics-only` (or `RewardSettings.rubrics_only`) and no rubric is on file for this task:
    the rollout is refused (unscored, None at the TRL boundary), never scored against a fresh rubric."""
