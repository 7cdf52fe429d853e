"""The verifier as TRL reward functions: `uv_process`, `uv_outcome` (and `uv_combined`).

Contract (TRL >= 1.16, `GRPOTrainer._calculate_rewards`): called with keyword arguments
`prompts, completions, completion_ids, trainer_state, log_extra, log_metric, [environments],
**dataset_columns_and_rollout_fields`; returns one `float | None` per completion. `None` means the
verifier could not score that rollout (judge down, invalid trajectory...), or scored it only with a
fallback listed in `RewardSettings.none_if_degraded`: TRL excludes it instead of treating it as a
failure, which a 0 would wrongly do, or trusting a number that was never checked.

Why callable classes with an async `__call__` and a class-level `__name__`: TRL detects them as
async (`trl.trainer.utils.is_async_callable`) and awaits them concurrently; the metric names
(`rewards/uv_process/mean`) stay stable; and instances pickle (the async GRPO worker pickles reward
functions) because they hold only `RewardSettings` - the session is looked up again after unpickling.
"""
from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from verifier.errors import CuaVerifierError, JudgeUnavailableError, TrajectoryError
from verifier.loaders.rollouts import build_trajectories
from verifier.records import degraded_stages, result_field
from verifier.session import Outcome, VerifierSession, get_session, rollout_key
from verifier.settings import RewardSettings, split_urls
from verifier.trajectory import Trajectory

log = logging.getLogger(__name__)


def prepare_rows(prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict[str, Any],
                 answer_tools: Sequence[str], *, require_screenshots: bool = False,
                 ) -> list[tuple[Trajectory, str] | Exception]:
    """Per row: (trajectory, content key), or the verifier error that makes the row unscorable
    (anything the policy wrote that cannot be read or hashed is that row's error, never the batch's).
    With `require_screenshots`, a row without screenshots is refused rather than verified on words."""
    rows: list[tuple[Trajectory, str] | Exception] = []
    for traj in build_trajectories(prompts, completions, kwargs, answer_tools=answer_tools):
        if isinstance(traj, Exception):
            rows.append(traj)
            continue
        if require_screenshots and not traj.screenshots:
            rows.append(ungrounded_error())
            continue
        try:
            rows.append((traj, rollout_key(traj)))
        except CuaVerifierError as exc:  # an unreadable screenshot, arguments too deep to hash
            rows.append(exc)
    return rows


def ungrounded_error() -> TrajectoryError:
    return TrajectoryError("no screenshots: refused (require_screenshots) instead of an action-only verification",
                           field="screenshots")


def too_degraded(result: Any, stages: frozenset[str] | set[str]) -> list[str]:
    """The stages of `result.degraded` listed in `stages` (sorted, unique): non-empty means None.

    Why: some fallbacks keep the pipeline going but leave a number the trainer must not trust
    (e.g. every rescoring run failed, so the process score is the agent's own claim).
    """
    return degraded_stages(result, stages)  # the one policy, shared with offline scoring


class _UVReward:
    """Shared machinery; subclasses say which number of the verification result is the reward."""

    __name__ = "uv_reward"
    extra_columns: tuple[str, ...] = ()

    def __init__(self, settings: RewardSettings | None = None, *, name: str | None = None,
                 judge_url: str | list[str] | None = None, model: str | None = None,
                 **overrides: Any) -> None:
        if judge_url is not None or model is not None or overrides:
            base = settings.model_dump() if settings is not None else {}
            base.update(overrides)
            judge = dict(base.get("judge") or {})
            if judge_url is not None:
                judge["base_urls"] = split_urls(judge_url)
            if model is not None:
                judge["model"] = model
            base["judge"] = judge
            settings = RewardSettings.model_validate(base)
        self.settings = settings  # None: read the environment at first call
        if name is not None:
            self.__name__ = name
        self._session: VerifierSession | None = None

    # ---- pickling: only settings travel -------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_session"] = None
        return state

    def __repr__(self) -> str:
        source = "env" if self.settings is None else "explicit"
        return f"{type(self).__name__}(name={self.__name__!r}, settings={source})"

    @property
    def session(self) -> VerifierSession:
        if self._session is None:
            settings = self.settings if self.settings is not None else RewardSettings.from_env()
            self._session = get_session(settings)
        return self._session

    # ---- the reward ---------------------------------------------------------------------------
    def value(self, result: Any) -> float | None:
        """The reward for one scored result; None when the result has no such number."""
        raise NotImplementedError

    async def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],
                       completion_ids: Sequence[Any] | None = None, **kwargs: Any) -> list[float | None]:
        session = self.session
        budget = session.settings.batch_deadline_s  # the whole call, conversion included
        deadline = None if budget is None else asyncio.get_running_loop().time() + budget
        # conversion and content hashing touch every image: keep them off TRL's event loop
        rows = await asyncio.to_thread(prepare_rows, prompts, completions, kwargs, session.settings.answer_tools,
                                       require_screenshots=session.settings.require_screenshots)

        # a `rubric` dataset column (a rubric file's line or a bare rubric, docs/rubrics.md) scores each
        # row against its own rubric: no rubric call, the same rubric on every rank and epoch
        column = kwargs.get("rubric")
        given = [r or None for r in column] if column is not None else [None] * len(rows)

        async def one(row: Any, rubric: Any) -> Outcome:
            if isinstance(row, Exception):
                return Outcome(error=row)
            if rubric is None:
                return await session.verify(*row, deadline=deadline)
            return await session.verify(*row, deadline=deadline, rubric=rubric)

        outcomes = await asyncio.gather(*(one(row, rubric) for row, rubric in zip(rows, given, strict=True)))
        weak = [too_degraded(o.result, session.settings.none_if_degraded) if o.ok else [] for o in outcomes]
        rewards = [self.value(o.result) if o.ok and not w else None for o, w in zip(outcomes, weak)]
        reasons = Counter(type(o.error).__name__ for o in outcomes if not o.ok)
        if reasons:  # one line per batch; each rollout's reason is in log_extra
            log.warning("%s: %d of %d rollouts unscored (%s)", self.__name__, sum(reasons.values()),
                        len(outcomes), ", ".join(f"{n} {k}" for k, n in reasons.most_common()))
        if kwargs.get("log_metric") is not None:
            self._log_metrics(kwargs["log_metric"], outcomes, weak)
        if kwargs.get("log_extra") is not None:
            self._log_extra(kwargs["log_extra"], outcomes, weak)
        return rewards

    def _log_metrics(self, log_metric: Any, outcomes: list[Outcome], weak: list[list[str]]) -> None:
        """Per batch: failure rate (own name; too-degraded rows count as failures, and separately
        as `degraded_none_rate`) and verification cost (shared `uv/` names)."""
        n = max(len(outcomes), 1)
        log_metric(f"{self.__name__}/failure_rate", sum(not o.ok or bool(w) for o, w in zip(outcomes, weak)) / n)
        log_metric(f"{self.__name__}/degraded_none_rate", sum(bool(w) for w in weak) / n)
        for metric, kind in (("judge_unavailable_rate", JudgeUnavailableError),  # outage, deadline, breaker
                             ("invalid_input_rate", TrajectoryError)):  # what the policy wrote
            log_metric(f"{self.__name__}/{metric}", sum(isinstance(o.error, kind) for o in outcomes) / n)
        ok = [o.result for o in outcomes if o.ok]
        if not ok:
            return
        # 1.0 when screenshots were judged, 0.0 in action-only mode (the agent's words alone)
        log_metric("uv_grounded", sum(bool(result_field(r, "grounded")) for r in ok) / len(ok))
        def mean(name: str) -> float | None:
            vals = [float(v) for v in (result_field(r, name) for r in ok) if v is not None]
            return sum(vals) / len(vals) if vals else None
        tokens = [float((result_field(r, "usage.prompt_tokens") or 0)
                        + (result_field(r, "usage.completion_tokens") or 0)) for r in ok]
        degraded = sum(bool(result_field(r, "degraded")) for r in ok) / len(ok)
        for metric, val in (("uv/judge_latency_s", mean("usage.latency_s")),
                            ("uv/judge_calls_per_rollout", mean("usage.calls")),
                            ("uv/tokens_per_rollout", sum(tokens) / len(tokens)),
                            ("uv/degraded_rate", degraded)):
            if val is not None and math.isfinite(val):
                log_metric(metric, val)

    def _log_extra(self, log_extra: Any, outcomes: list[Outcome], weak: list[list[str]]) -> None:
        """Completions-table columns. Each column keeps one type (TRL writes the table to parquet,
        which refuses a column mixing numbers and strings): an unscored row is `None` in every
        result column, and why it is unscored goes in its own string column `<name>/unscored_reason`."""
        columns = {
            "outcome_reasoning": lambda r: result_field(r, "outcome_reasoning"),
            "process_score": lambda r: result_field(r, "process_score"),
            "first_failure_step": lambda r: result_field(r, "diagnosis.first_failure_step"),
        }
        reasons = [(f"degraded {', '.join(w)}" if w else None) if o.ok
                   else f"{type(o.error).__name__}: {o.error}"[:300] for o, w in zip(outcomes, weak)]
        for col in self.extra_columns:
            log_extra(f"{self.__name__}/{col}",
                      [columns[col](o.result) if reason is None else None for o, reason in zip(outcomes, reasons)])
        log_extra(f"{self.__name__}/uv_grounded",
                  [(1.0 if result_field(o.result, "grounded") else 0.0) if o.ok else None for o in outcomes])
        log_extra(f"{self.__name__}/unscored_reason", reasons)


class UVProcessReward(_UVReward):
    """Process reward in [0, 1]: the verifier's rubric-based process score."""

    __name__ = "uv_process"
    extra_columns = ("first_failure_step",)

    def value(self, result: Any) -> float | None:
        score = result_field(result, "process_score")  # None from a verdict-only verifier
        return None if score is None else float(score)


class UVOutcomeReward(_UVReward):
    """Outcome reward in {0, 1}: did the agent accomplish what the user asked."""

    __name__ = "uv_outcome"
    extra_columns = ("outcome_reasoning", "process_score")

    def value(self, result: Any) -> float:
        return 1.0 if result_field(result, "outcome_success") else 0.0


class UVCombinedReward(_UVReward):
    """One scalar: `w * process + (1 - w) * outcome`, w = `combined_process_weight` (default 0.5)."""

    __name__ = "uv_combined"
    extra_columns = ("outcome_reasoning", "first_failure_step")

    def value(self, result: Any) -> float | None:
        w = self.session.settings.combined_process_weight
        outcome = 1.0 if result_field(result, "outcome_success") else 0.0
        score = result_field(result, "process_score")
        return None if score is None else w * float(score) + (1 - w) * outcome
