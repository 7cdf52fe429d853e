"""TRL reward functions that call a `cua-verifier serve-reward` service instead of verifying in-process.

Why: on a multi-GPU run every rank verifies its own slice of each group; pointed at one service,
all ranks share one stage cache, so a task's rubric is written once. The functions keep the names,
the `None` semantics and the logged sub-metrics of `reward.uv_process` / `uv_outcome` /
`uv_combined` (they *are* those classes, with the session swapped for an HTTP client)::

    from reward.remote import make_remote_rewards
    r = make_remote_rewards("http://10.0.0.5:8012", api_key_env="CUA_REWARD_API_KEY")
    trainer = GRPOTrainer(model, reward_funcs=[r.process, r.outcome], ...)

The client (`reward.client`, shared with the OpenRLHF and verl adapters) retries 429/503 after the
service's Retry-After and connection failures with backoff; what still fails (judge down, bad trajectory, deadline) becomes `None` for that rollout. Process
and outcome share one request per rollout (single flight keyed by the rollout's content hash).
Instances pickle (only settings travel), like the in-process rewards.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections import OrderedDict
from typing import Any, NamedTuple
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from verifier.errors import JudgeDeadlineError
from verifier.session import Outcome, rollout_key
from verifier.settings import DEFAULT_ANSWER_TOOLS
from verifier.trajectory import Trajectory

from .client import ENV_KEY, ENV_URL, ClientSettings, RemoteError, apost, async_client
from .functions import UVCombinedReward, UVOutcomeReward, UVProcessReward

log = logging.getLogger(__name__)
__all__ = ["ENV_KEY", "ENV_URL", "RemoteError", "RemoteSettings", "make_remote_rewards"]


class RemoteSettings(BaseModel):
    """Where the service is and how hard to try; plain data so reward objects pickle."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(default_factory=lambda: ClientSettings().url)
    api_key_env: str = ENV_KEY
    timeout_s: float = Field(default=900.0, gt=0, description="one HTTP request")
    deadline_s: float | None = Field(default=None, gt=0, description="asked of the service per rollout")
    max_retries: int = Field(default=8, ge=0, description="retries after 429/503/connection errors")
    max_wait_s: float = Field(default=600.0, ge=0, description=(
        "retries end once a wait would finish past timeout_s + max_wait_s after the first attempt"))
    max_concurrency: int = Field(default=64, ge=1, description="requests in flight per process")
    batch_deadline_s: float | None = Field(default=900.0, gt=0, description=(
        "one reward call's time budget, as for the in-process rewards: rollouts not answered by then are None"))
    # read by the shared reward code, as in RewardSettings
    answer_tools: list[str] = Field(default_factory=lambda: list(DEFAULT_ANSWER_TOOLS))
    none_if_degraded: frozenset[str] = frozenset({"rescoring", "side_effects"})
    combined_process_weight: float = Field(default=0.5, ge=0, le=1)
    failure_ttl_s: float = Field(default=300.0, ge=0)
    cache_size: int = Field(default=4096, ge=1)
    require_screenshots: bool = Field(default=False, description=(
        "refuse rollouts without screenshots (None) instead of verifying them in action-only mode"))

    def client(self) -> ClientSettings:
        return ClientSettings(url=self.url, api_key_env=self.api_key_env, timeout_s=self.timeout_s,
                              max_retries=self.max_retries, deadline_s=self.timeout_s + self.max_wait_s)


class RemoteSession:
    """The client side of one service: HTTP per event loop, single flight + LRU per rollout."""

    def __init__(self, settings: RemoteSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
        self._done: OrderedDict[str, Outcome] = OrderedDict()
        self.requests = 0
        self.retries = {"429": 0, "503": 0, "connect": 0}
        self._client = settings.client()

    def _loop_state(self) -> Any:
        loop = asyncio.get_running_loop()
        with self._lock:
            st = self._loops.get(loop)
            if st is None:
                client = async_client(self._client, self.settings.max_concurrency)
                st = self._loops[loop] = (client, asyncio.Semaphore(self.settings.max_concurrency), {})
            return st

    def _cached(self, key: str) -> Outcome | None:
        with self._lock:
            hit = self._done.get(key)
            if hit is not None and not hit.ok and time.monotonic() - hit.at > self.settings.failure_ttl_s:
                del self._done[key]
                return None
            return hit

    def _store(self, key: str, outcome: Outcome) -> None:
        with self._lock:
            self._done[key] = outcome
            while len(self._done) > self.settings.cache_size:
                self._done.popitem(last=False)

    async def verify(self, traj: Trajectory, key: str | None = None, *, deadline: float | None = None) -> Outcome:
        """One rollout's outcome; concurrent callers for the same rollout share one request. Past
        `deadline` (event-loop time, the reward call's budget) the outcome is a `JudgeDeadlineError`
        (None at the TRL boundary), never a stalled training step."""
        if deadline is None:
            return await self._verify(traj, key)
        left = deadline - asyncio.get_running_loop().time()
        try:
            return await asyncio.wait_for(self._verify(traj, key, deadline), timeout=max(left, 0.0))
        except TimeoutError:
            return Outcome(error=JudgeDeadlineError(
                f"deadline passed waiting for the reward service (batch_deadline_s={self.settings.batch_deadline_s})"))

    async def _verify(self, traj: Trajectory, key: str | None, deadline: float | None = None) -> Outcome:
        key = key or await asyncio.to_thread(rollout_key, traj)
        if (hit := self._cached(key)) is not None:
            return hit
        client, sem, inflight = self._loop_state()
        if (fut := inflight.get(key)) is not None:
            try:
                return await asyncio.shield(fut)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if fut.cancelled() and not (task is not None and task.cancelling()):
                    # the caller that started the request hit its own deadline; this one did not
                    return Outcome(error=JudgeDeadlineError("the shared request was cut by another caller's deadline"))
                raise
        fut = inflight[key] = asyncio.get_running_loop().create_future()
        try:
            outcome = await self._request(client, sem, traj)
            self._store(key, outcome)
            fut.set_result(outcome)
            return outcome
        except BaseException:
            fut.cancel()
            raise
        finally:
            inflight.pop(key, None)

    async def _request(self, client: Any, sem: asyncio.Semaphore, traj: Trajectory) -> Outcome:
        body: dict[str, Any] = {"trajectory": await asyncio.to_thread(traj.model_dump, mode="json")}
        if self.settings.deadline_s:
            body["deadline_s"] = self.settings.deadline_s
        async with sem:
            self.requests += 1
            try:
                # X-CUA-Task: a service on Ray Serve routes every rollout of a task to one replica
                # by it (without parsing the body); a single process ignores it.
                return Outcome(result=await apost(self._client, client, "/v1/verify", body,
                                                  retries=self.retries, headers={"X-CUA-Task": quote(traj.task.id, safe="")}))
            except RemoteError as exc:
                return Outcome(error=exc)

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            st = self._loops.pop(loop, None)
        if st is not None:
            await st[0].aclose()


_SESSIONS: dict[str, RemoteSession] = {}
_SESSIONS_LOCK = threading.Lock()


def get_remote_session(settings: RemoteSettings) -> RemoteSession:
    """The process-wide client for these settings (process and outcome share it)."""
    key = settings.model_dump_json()
    with _SESSIONS_LOCK:
        if key not in _SESSIONS:
            _SESSIONS[key] = RemoteSession(settings)
        return _SESSIONS[key]


class _Remote:
    """Mixin: the in-process reward classes with the session swapped for the service client."""

    def __init__(self, remote: RemoteSettings | None = None, **fields: Any) -> None:
        self.remote = remote if remote is not None else RemoteSettings(**fields)
        super().__init__(name=None)  # type: ignore[call-arg]

    @property
    def session(self) -> Any:  # type: ignore[override]
        if self._session is None:  # type: ignore[has-type]
            self._session = get_remote_session(self.remote)
        return self._session

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.__name__!r}, url={self.remote.url!r})"  # type: ignore[attr-defined]


class RemoteProcessReward(_Remote, UVProcessReward):
    """`uv_process`, verified by the service."""


class RemoteOutcomeReward(_Remote, UVOutcomeReward):
    """`uv_outcome`, verified by the service."""


class RemoteCombinedReward(_Remote, UVCombinedReward):
    """`uv_combined`, verified by the service."""


class RemoteRewards(NamedTuple):
    process: RemoteProcessReward
    outcome: RemoteOutcomeReward
    combined: RemoteCombinedReward


def make_remote_rewards(url: str | None = None, *, api_key_env: str = ENV_KEY, **fields: Any) -> RemoteRewards:
    """The three rewards on one client. `fields` are `RemoteSettings` fields (timeouts, retries...)."""
    remote = RemoteSettings(**({"url": url} if url else {}), api_key_env=api_key_env, **fields)
    return RemoteRewards(RemoteProcessReward(remote), RemoteOutcomeReward(remote), RemoteCombinedReward(remote))


#: Module-level instances for `trl grpo --reward_funcs reward.remote.uv_process ...` ($CUA_REWARD_URL).
uv_process = RemoteProcessReward()
uv_outcome = RemoteOutcomeReward()
uv_combined = RemoteCombinedReward()
