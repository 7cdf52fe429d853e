"""Parse a request's trajectory and verify it within a deadline, on the one shared session.

Why the verification runs as its own task: a request whose deadline passes answers 504, but the
verification it started keeps going and lands in the session's cache, so the client's retry (or
another rank asking for the same rollout) gets it without a second judge round. Its queue slot is
released only when the work really ends, so the bound is on work, not on waiting requests.
Shutdown first drains (finishes) in-flight work for `grace_s`, then aborts: waiting requests
answer 503 instead of being cut off.
"""
from __future__ import annotations

import asyncio
import logging
import math
import time
from pathlib import Path
from typing import Any

from verifier.errors import (
    CuaVerifierError,
    JudgeCircuitOpenError,
    JudgeDeadlineError,
    JudgeError,
    JudgeUnavailableError,
    ScreenshotError,
    TrajectoryError,
)
from verifier.judge.images import image_verdict
from verifier.loaders import load_native_record
from verifier.loaders._common import check_screenshots
from verifier.session import Outcome, VerifierSession
from verifier.settings import RewardSettings
from verifier.trajectory import Screenshot, Trajectory

from .budget import ByteBudget
from .config import ServiceConfig
from .inline import DecodedImages
from .memory import IdleRelease
from .metrics import CountingJudge, ServiceMetrics
from .models import ItemResult
from .queue import AdmissionQueue
from .readiness import Readiness

log = logging.getLogger(__name__)

#: Retry-After (seconds) of a 503 for a judge outage the breaker has not opened on yet: the request
#: already paid the judge client's retry ladder, so the judge may well be back a moment later.
OUTAGE_RETRY_AFTER_S = 2


class Refused(Exception):
    """The service will not do this work now (429 queue full, 503 shutting down)."""

    def __init__(self, status: int, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.status, self.retry_after = status, retry_after


class DeadlineExceeded(CuaVerifierError):
    """The request's deadline passed before its verification finished."""


class ShuttingDown(CuaVerifierError):
    """The service stopped before this verification finished."""


class _Session(VerifierSession):
    """The shared session, with every judge call counted for /metrics."""

    def __init__(self, settings: RewardSettings, metrics: ServiceMetrics) -> None:
        self.metrics = metrics
        super().__init__(settings)

    def build_judge(self) -> Any:
        return CountingJudge(super().build_judge(), self.metrics.judge_calls, self.metrics.judge_seconds)

    def _store(self, key: str, outcome: Outcome) -> None:
        # The judge being unreachable says nothing about the rollout: its client is told to retry
        # (503 + Retry-After), so that retry must reach the judge again, not this failure.
        if not isinstance(outcome.error, JudgeUnavailableError):
            super()._store(key, outcome)


def confine(path: str, root: Path | None, *, field: str) -> str:
    """`path` resolved under `root`; anything else (no root, `..`, a symlink out) is refused."""
    if root is None:
        raise ScreenshotError("screenshot paths are not accepted by this service (no --media-root): "
                              "send the image inline as a data URL", field=field)
    p = Path(path)
    full = (p if p.is_absolute() else root / p).resolve()
    if not full.is_relative_to(root):
        raise ScreenshotError("screenshot path is outside the service's media root", field=field)
    return str(full)


def parse_trajectory(record: dict[str, Any], root: Path | None, *, where: str,
                     decoded: DecodedImages | None = None) -> Trajectory:
    """A request record -> Trajectory, with paths confined and every image header checked (data URLs
    the body parser already decoded take their facts from `decoded` instead of a second decode)."""
    # The loader confines paths to `root` (and re-checks before reading); with no root the service
    # refuses every path below, with its own message, so the loader need not confine them.
    traj = load_native_record(record, file=where, check_images=False,
                              base_dir=root, allow_outside_screenshots=root is None)
    for k, shot in enumerate(traj.screenshots):
        if shot.path is not None:
            shot.path = confine(shot.path, root, field=f"screenshots[{k}].path")
    if decoded is not None:
        decoded.apply(traj.screenshots)
    check_screenshots(traj.screenshots, file=where, each=_verify_and_drop)
    traj.source_path = record.get("source_path")  # the id the client gave, as in-process
    return traj


def _verify_and_drop(shot: Screenshot) -> None:
    """Hash and verify a screenshot while its decoded bytes are held (and hot in cache), then drop
    them: the base64 text stays (it is sent as it is); the verdict is kept by hash."""
    image_verdict(shot.sha256, shot.bytes)
    shot.drop_bytes()


def status_of(error: BaseException) -> int:
    """The HTTP status of a rollout's failure. A judge outage (refused or reset connections,
    timeouts, 5xx, malformed 200s that outlived the judge client's retries, or an open circuit) is
    503 with a Retry-After, which every client of the service retries within its deadline: it says
    nothing about the rollout. Only a judge that answered and could not be used is 502."""
    if isinstance(error, TrajectoryError):
        return 422
    if isinstance(error, JudgeDeadlineError):  # the judge did not answer within the deadline
        return 504
    if isinstance(error, JudgeUnavailableError):  # circuit open included: come back later
        return 503
    if isinstance(error, JudgeError):
        return 502
    if isinstance(error, DeadlineExceeded):
        return 504
    if isinstance(error, ShuttingDown):
        return 503
    return 500


class RewardService:
    def __init__(self, settings: RewardSettings, config: ServiceConfig) -> None:
        self.config = config
        self.metrics = ServiceMetrics()
        self.session = _Session(settings, self.metrics)
        self.queue = AdmissionQueue(config.queue_size, concurrency=settings.max_concurrency)
        self.budget = ByteBudget(config.max_inflight_bytes, wait_s=config.admission_wait_s)
        self.root = config.media_path()
        self.readiness = Readiness(settings.judge if settings.judge_factory is None else {},
                                   ttl_s=config.ready_cache_s)
        self.draining = False
        self.replica: str | None = None  # the Ray Serve replica id (serve_app), None in one process
        self.board: Any = None  # serve_board.Board on Ray Serve: /health, /metrics for the deployment
        self._abort: asyncio.Event | None = None
        self.tasks: set[asyncio.Task] = set()
        self.idle = IdleRelease(lambda: self.queue.depth)  # collect and trim once idle (memory.py)
        self.metrics.watch(self)

    @property
    def abort_event(self) -> asyncio.Event:
        if self._abort is None:
            self._abort = asyncio.Event()
        return self._abort

    # ---- admission ----------------------------------------------------------------------------
    def admit(self, n: int) -> None:
        if self.draining:
            self.metrics.rejected.labels(reason="shutting_down").inc()
            raise Refused(503, "the service is shutting down", retry_after=5)
        if not self.queue.try_admit(n):
            self.metrics.rejected.labels(reason="queue_full").inc()
            raise Refused(429, f"queue full ({self.queue.depth}/{self.queue.capacity} trajectories)",
                          retry_after=self.queue.retry_after())

    # ---- work ---------------------------------------------------------------------------------
    async def verify_records(self, records: list[dict[str, Any]], deadline_s: float | None,
                             decoded: DecodedImages | None = None,
                             rubrics: list[Any] | None = None) -> list[ItemResult]:
        """Admit, parse and verify `records` together; one `ItemResult` each, in order. `rubrics`: the
        request's rubric per record (None: the --rubrics file's, or a generated one)."""
        self.admit(len(records))
        timeout = self.config.deadline(deadline_s)
        given = rubrics or [None] * len(records)
        return list(await asyncio.gather(*(self._one(rec, k, timeout, decoded, given[k])
                                           for k, rec in enumerate(records))))

    async def _one(self, record: dict[str, Any], k: int, timeout: float,
                   decoded: DecodedImages | None = None, rubric: Any = None) -> ItemResult:
        """One rollout's answer. Its admission slot is released on every way out (`finally`): once
        the verification task owns it, by that task's end; otherwise here, whatever was raised."""
        started, handed_over = time.monotonic(), False
        try:
            try:
                traj = await asyncio.to_thread(parse_trajectory, record, self.root, where=f"trajectories[{k}]",
                                               decoded=decoded)
            except CuaVerifierError as exc:
                return self._answer(Outcome(error=exc))
            except (ValueError, TypeError, OSError, RecursionError) as exc:  # bad input no check named
                return self._answer(Outcome(error=TrajectoryError(
                    f"invalid trajectory: {type(exc).__name__}: {exc}", file=f"trajectories[{k}]")))
            task = asyncio.ensure_future(self.session.verify(traj, rubric=rubric) if rubric is not None
                                         else self.session.verify(traj))
            self.tasks.add(task)
            task.add_done_callback(lambda t: (self.tasks.discard(t), self.queue.release(1, started=started),
                                              self.idle.ended()))
            handed_over = True
            return await self._wait(task, timeout)
        except Exception as exc:  # a bug: this item answers 500; a batch's other items keep theirs
            log.exception("reward service: unexpected error on trajectories[%d]", k)
            return self._answer(Outcome(error=exc))
        finally:
            if not handed_over:
                self.queue.release(1)

    async def _wait(self, task: asyncio.Future, timeout: float) -> ItemResult:
        abort = asyncio.ensure_future(self.abort_event.wait())
        try:
            done, _ = await asyncio.wait({task, abort}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            abort.cancel()
        if task in done and not task.cancelled() and task.exception() is None:
            return self._answer(task.result())
        if task in done and not task.cancelled():
            return self._answer(Outcome(error=task.exception()))
        if abort in done or task.cancelled():
            return self._answer(Outcome(error=ShuttingDown("the service stopped before this rollout was verified")))
        return self._answer(Outcome(error=DeadlineExceeded(f"not verified within the {timeout:g}s deadline")))

    def answer_error(self, error: BaseException) -> ItemResult:
        """The unscored answer for a rollout rejected before verification (counted like the rest)."""
        return self._answer(Outcome(error=error))

    def _answer(self, outcome: Outcome) -> ItemResult:
        if outcome.ok:
            self.metrics.verifications.labels(status="scored").inc()
            result = outcome.result
            data = result.model_dump(mode="json") if hasattr(result, "model_dump") else result
            return ItemResult(status="scored", result=data)
        err = outcome.error
        self.metrics.verifications.labels(status="unscored").inc()
        self.metrics.unscored.labels(reason=type(err).__name__).inc()
        status = status_of(err)
        retry_after = None
        if isinstance(err, JudgeCircuitOpenError):
            retry_after = max(1, math.ceil(err.retry_in_s))
        elif isinstance(err, JudgeUnavailableError):
            retry_after = OUTAGE_RETRY_AFTER_S
        elif status == 503:
            retry_after = 5
        return ItemResult(status="unscored", error_type=type(err).__name__, reason=str(err)[:2000],
                          http_status=status, retry_after=retry_after)

    # ---- shutdown -----------------------------------------------------------------------------
    async def drain(self) -> None:
        """Refuse new work, finish in-flight work for `grace_s`, then abort what is left."""
        self.draining = True
        deadline = time.monotonic() + self.config.grace_s
        while self.tasks and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self.tasks:
            log.warning("shutdown: aborting %d unfinished verification(s)", len(self.tasks))
        self.abort_event.set()
        await asyncio.sleep(0)  # let waiting requests answer 503 first
        for t in list(self.tasks):
            t.cancel()
        await self.session.aclose()
