"""One verification per rollout, shared by every reward function in the process.

Why: process and outcome are two TRL reward functions that TRL awaits concurrently, but both come
from the same pipeline run. A process-wide `VerifierSession` (one per distinct settings) keeps
- a single-flight table keyed by the rollout's content hash, so the second reward awaits the
  first one's in-flight verification instead of starting another;
- a bounded LRU of finished verifications (`cache_size`; failures expire after `failure_ttl_s`),
  so a reward whose coroutine runs after the other has finished still gets the same result;
- time budgets: a verification that has not finished by its deadline (the reward batch's
  `batch_deadline_s`, or the verification's own `verify_deadline_s`, whichever comes first) is
  cancelled and ends as `JudgeDeadlineError` (None at the TRL boundary), so a judge that accepts
  connections and never answers cannot hold a training step;
- one `StageCache` (rubric once per task: GRPO's G rollouts of a prompt share it);
- per event loop: the judge client and the concurrency semaphore. TRL runs async rewards on a
  daemon-thread loop and offline scoring uses `asyncio.run`; loop-bound objects never cross loops.

The session is core logic (the rewards, `score-dataset`, its Ray actors and the reward service all
verify through it), so it lives in `verifier/`; `reward.session` still names this module.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from verifier.errors import ConfigError, CuaVerifierError, JudgeDeadlineError, TrajectoryError
from verifier.judge.deadline import deadline_at
from verifier.trajectory import Trajectory

from .rubrics import RubricPlan
from .settings import RewardSettings, resolve
from .waits import Waits, waited

log = logging.getLogger(__name__)
#: After a deadline, how long in-flight work may take to end by its own timeout before it is cancelled.
DEADLINE_GRACE_S = 0.25


@dataclass
class Outcome:
    """A finished verification: `result` when it worked, `error` when it did not."""

    result: Any = None
    error: BaseException | None = None
    at: float = field(default_factory=time.monotonic)

    @property
    def ok(self) -> bool:
        return self.error is None


def own_outcome(outcome: Outcome, traj: Trajectory) -> Outcome:
    """`outcome` with its result named after `traj` (a copy when it came from another rollout)."""
    result = outcome.result
    own_id = traj.source_path or traj.task.id
    if result is None or getattr(result, "trajectory_id", own_id) == own_id:
        return outcome
    return Outcome(result=result.model_copy(update={"trajectory_id": own_id}), error=outcome.error, at=outcome.at)


def rollout_key(traj: Trajectory) -> str:
    """Content hash of everything the verifier reads (screenshots by their pixel-file hash).

    Raises:
        TrajectoryError: the policy-written content cannot be serialised (nested too deeply).
    """
    try:
        data = {
            "task": traj.task.model_dump(mode="json"),
            "steps": [s.model_dump(mode="json") for s in traj.steps],
            "shots": [(s.step, s.timing, s.sha256) for s in traj.screenshots],
            "final_answer": traj.final_answer,
            "status": traj.status.value,
        }
        blob = json.dumps(data, sort_keys=True, default=str)
    except (ValueError, RecursionError) as exc:  # pydantic's serialization depth, json's recursion
        raise TrajectoryError(f"rollout cannot be serialised: {exc}") from exc
    return hashlib.sha256(blob.encode()).hexdigest()


class _LoopState:
    """Objects bound to one event loop: judge client, semaphore, in-flight futures."""

    def __init__(self, session: VerifierSession) -> None:
        self.judge = session.build_judge()
        self.rubric_judge = session.build_rubric_judge() if session.settings.rubric_judge else None
        self.semaphore = asyncio.Semaphore(session.settings.max_concurrency)
        self.inflight: dict[str, asyncio.Future] = {}


class VerifierSession:
    """Shared verification state for one `RewardSettings` within one process."""

    def __init__(self, settings: RewardSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary())
        self._done: OrderedDict[str, Outcome] = OrderedDict()
        self._verify = resolve(settings.verify_fn)
        self._verifier_config = self._build_verifier_config()
        self.runs = 0  # pipeline runs started (tests and metrics read it)
        self.slot_waits = Waits()  # rollouts that found every `max_concurrency` slot taken
        self._judge_waits: list[Waits] = []  # each loop's judge's (a few bytes per loop ever run)
        factory = settings.cache_factory
        # StageCache keeps finished values as plain data and in-flight tasks per loop, so one
        # instance serves every loop: the rubric of a task is generated once per process.
        self.cache = resolve(factory)() if factory else None
        # The rubric file is read and checked once, now: a bad file stops the run before a rollout is scored.
        self.rubrics = RubricPlan.of(settings.rubrics, settings.rubrics_only)

    # ---- construction -------------------------------------------------------------------------
    def _build_verifier_config(self) -> Any:
        if not self.settings.verifier:
            return None  # verify() uses its defaults
        from verifier.config import VerifierConfig  # lazy: only the real pipeline needs it

        try:
            return VerifierConfig(**self.settings.verifier)
        except ValueError as exc:
            raise ConfigError(f"invalid verifier settings: {exc}") from exc

    def build_judge(self) -> Any:
        """A judge for the current loop: the custom factory, else `make_judge(JudgeConfig(...))`."""
        if self.settings.judge_factory is not None:
            return resolve(self.settings.judge_factory)()
        return self._judge_from(self.settings.judge)

    def build_rubric_judge(self) -> Any:
        """The judge that writes rubrics no file provides: `settings.rubric_judge` over the scoring
        judge's fields (a stronger model, its own URL)."""
        return self._judge_from({**self.settings.judge, **self.settings.rubric_judge})

    def _judge_from(self, judge_cfg: dict[str, Any]) -> Any:
        if not judge_cfg.get("base_urls") or not judge_cfg.get("model"):
            raise ConfigError("no judge configured: set CUA_JUDGE_URL and CUA_JUDGE_MODEL, or "
                              "CUA_VERIFIER_CONFIG with a 'judge' section, or pass judge_url/model")
        from verifier.judge import make_judge
        from verifier.judge.config import JudgeConfig

        try:
            config = JudgeConfig(**judge_cfg)
        except ValueError as exc:
            raise ConfigError(f"invalid judge settings: {exc}") from exc
        return make_judge(config)

    def judge_for_loop(self) -> Any:
        """The judge of the running loop, built now (so configuration errors surface early)."""
        return self._state().judge

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        with self._lock:
            st = self._loops.get(loop)
            if st is None:
                st = self._loops[loop] = _LoopState(self)
                if isinstance(waits := getattr(st.judge, "waits", None), Waits):
                    self._judge_waits.append(waits)  # kept past its loop: the sum never goes back
            return st

    # ---- the single flight --------------------------------------------------------------------
    def _cached(self, key: str) -> Outcome | None:
        with self._lock:
            hit = self._done.get(key)
            if hit is None:
                return None
            if not hit.ok and time.monotonic() - hit.at > self.settings.failure_ttl_s:
                del self._done[key]
                return None
            self._done.move_to_end(key)
            return hit

    def _store(self, key: str, outcome: Outcome) -> None:
        if outcome.error is not None:  # kept for minutes: do not pin the failed run's frames
            outcome.error.__traceback__ = None
        with self._lock:
            self._done[key] = outcome
            self._done.move_to_end(key)
            while len(self._done) > self.settings.cache_size:
                self._done.popitem(last=False)

    async def verify(self, traj: Trajectory, key: str | None = None, *,
                     deadline: float | None = None, rubric: Any = None) -> Outcome:
        """Verify once per distinct rollout; concurrent and later callers share the outcome.

        `key` is `rollout_key(traj)` when the caller already computed it (off the event loop).
        `deadline` (the running loop's `time()`, e.g. the reward batch's end) bounds this caller's
        wait; the verification it starts also stops at ``now + verify_deadline_s``. A shared
        result is given back under this rollout's own `trajectory_id` (the key is its content, and
        byte-identical copies from two files or rows are still two rollouts). `rubric`: one given
        with the rollout (a `rubric` column or request field, `rubrics.inline_rubric`), part of the key.
        """
        return own_outcome(await self._shared(traj, key, deadline, rubric), traj)

    async def _shared(self, traj: Trajectory, key: str | None, deadline: float | None, rubric: Any = None) -> Outcome:
        if key is None:
            try:
                key = await asyncio.to_thread(rollout_key, traj)  # hashing decodes/encodes images
            except CuaVerifierError as exc:  # e.g. an unreadable screenshot: this rollout only
                return Outcome(error=exc)
        if rubric is not None:  # the same rollout against another rubric is another verification
            key += ":" + hashlib.sha256(json.dumps(rubric, sort_keys=True, default=str).encode()).hexdigest()
        hit = self._cached(key)
        if hit is not None:
            return hit
        st = self._state()
        fut = st.inflight.get(key)
        if fut is not None:  # another reward started it: wait for it, within our own deadline
            try:
                return await asyncio.wait_for(asyncio.shield(fut), _remaining(deadline))
            except TimeoutError:
                return Outcome(error=self._late(traj, "waiting for the verification another reward started"))
        fut = asyncio.get_running_loop().create_future()
        st.inflight[key] = fut
        try:
            outcome = await self._run(st, traj, self._deadline(deadline), rubric)
        except asyncio.CancelledError:
            fut.cancel()  # followers must not hang
            raise
        except BaseException as exc:  # strict mode: followers see the same error
            fut.set_exception(exc)
            fut.exception()  # mark retrieved: the owner re-raises it
            raise
        else:
            self._store(key, outcome)
            fut.set_result(outcome)
            return outcome
        finally:
            st.inflight.pop(key, None)

    def _deadline(self, deadline: float | None) -> float | None:
        """The earlier of the caller's deadline and this verification's own budget."""
        own = self.settings.verify_deadline_s
        if own is not None:
            own += asyncio.get_running_loop().time()
        return min((d for d in (deadline, own) if d is not None), default=None)

    def _late(self, traj: Trajectory, doing: str) -> JudgeDeadlineError:
        s = self.settings
        err = JudgeDeadlineError(f"deadline passed {doing} (batch_deadline_s={s.batch_deadline_s}, "
                                 f"verify_deadline_s={s.verify_deadline_s})")
        log.warning("rollout of task %s not verified: %s", traj.task.id, err)
        return err

    async def _run(self, st: _LoopState, traj: Trajectory, deadline: float | None, rubric: Any = None) -> Outcome:
        """`_run_now` within `deadline`: judge requests time out by it (`deadline_at`: the breaker
        counts them), and a moment later anything still running is cancelled."""
        limit = None if deadline is None else max(0.0, deadline - asyncio.get_running_loop().time()) + DEADLINE_GRACE_S
        try:
            with deadline_at(deadline):  # the task wait_for creates copies this context
                return await asyncio.wait_for(self._run_now(st, traj, rubric), limit)
        except TimeoutError:
            if deadline is None or asyncio.get_running_loop().time() < deadline:
                raise  # not our budget: a TimeoutError the verifier let out (strict mode)
            return Outcome(error=self._late(traj, "before the verification finished"))

    async def _run_now(self, st: _LoopState, traj: Trajectory, rubric: Any = None) -> Outcome:
        async with waited(st.semaphore, self.slot_waits):
            self.runs += 1
            try:
                kwargs = self.rubrics.verify_kwargs(traj.task, inline=rubric, rubric_judge=st.rubric_judge)
                result = await self._verify(traj, self._verifier_config, judge=st.judge, cache=self.cache, **kwargs)
            except JudgeDeadlineError:
                return Outcome(error=self._late(traj, "before the verification finished"))
            except CuaVerifierError as exc:
                log.warning("rollout of task %s not verified: %s", traj.task.id, exc)
                return Outcome(error=exc)
            except Exception as exc:  # a bug, not a verdict: never a score either
                if self.settings.strict:
                    raise
                log.exception("unexpected error verifying task %s", traj.task.id)
                return Outcome(error=exc)
        return Outcome(result=result)

    def waits(self) -> dict[str, Waits]:
        """Waits at this session's bounds: rollout slots, and the judge's connections (summed over
        the judges of every loop this session has run on, closed ones included, so the total is a
        counter; a judge without a pool, such as a scripted one, has none)."""
        with self._lock:
            judges = list(self._judge_waits)
        return {"slots": self.slot_waits, "judge": Waits.total(judges)}

    async def aclose(self) -> None:
        """Close the judge bound to the running loop (offline scoring calls this at the end)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            st = self._loops.pop(loop, None)
        if st is not None and hasattr(st.judge, "aclose"):
            await st.judge.aclose()


def _remaining(deadline: float | None) -> float | None:
    """Seconds from now (the running loop's clock) to `deadline`; None: no limit."""
    return None if deadline is None else max(0.0, deadline - asyncio.get_running_loop().time())


_SESSIONS: dict[str, VerifierSession] = {}
_SESSIONS_LOCK = threading.Lock()


def get_session(settings: RewardSettings) -> VerifierSession:
    """The process-wide session for these settings (created on first use)."""
    key = settings.fingerprint()
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(key)
        if session is None:
            session = _SESSIONS[key] = VerifierSession(settings)
        return session


def clear_sessions() -> None:
    """Forget every session (tests; or after changing the environment in a notebook)."""
    with _SESSIONS_LOCK:
        _SESSIONS.clear()
