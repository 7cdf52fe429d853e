"""What every stage shares: the run context, one way to call the judge, and the usage ledger.

Every judge call of a verification goes through `Run.ask`, which builds [system: the shared
principles][user: shared context, the stage's instructions, per-call part, images last] messages
(`rendering.messages`: one prefix for every call, for vLLM's prefix cache), and records calls, tokens, latency, the DAG round the call ran in, the model id and the prompt ids/hashes.
A stage that fails raises the judge's `JudgeError`; the orchestrator decides whether the run can
degrade (`Run.degrade`) or must stop.
"""
from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from ..bounds import at_bound, limits_note
from ..budget import Budget, Parts, reply_floor, reply_reserve
from ..cache import StageCache
from ..config import VerifierConfig
from ..errors import JudgeError
from ..judge.base import ImagePart, Judge, Sampling, Usage
from ..judge.schema import json_schema_for, reply_token_budget
from ..prompts import PromptInfo, render
from ..rendering import JOB_HEADING, SYSTEM_TEMPLATE, infos, messages, shared_context, system_prompt
from ..result import CallTrim, DegradedStage, StageUsage, UsageSummary
from ..schemas import Rubric
from ..trajectory import Trajectory

T = TypeVar("T", bound=BaseModel)


def _with_limits(per_call: str, limits: str) -> str:
    return f"{per_call}\n\n{limits}" if per_call and limits else per_call or limits


def _known_sum(values: Iterable[int | None]) -> int | None:
    """Sum of the counts a server reported; None when it reported none of them."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


@dataclass
class Ledger:
    """Accounting for one verification (the pipeline's `verify()` and the baselines alike)."""

    per_stage: dict[str, StageUsage] = field(default_factory=dict)
    models: set[str] = field(default_factory=set)
    prompts: dict[str, PromptInfo] = field(default_factory=dict)
    degraded: list[DegradedStage] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)
    """Reply fields that reached their schema bound (`bounds.at_bound`), as ``stage:path``."""
    overruled: list[str] = field(default_factory=list)
    """Judge claims code overruled (`verifier.guards`)."""

    def note_truncated(self, stage: str, reply: BaseModel) -> None:
        for path in at_bound(reply):
            entry = f"{stage}:{path}"
            if entry not in self.truncated:  # V votes of one stage may hit the same bound
                self.truncated.append(entry)

    def stage(self, name: str) -> StageUsage:
        return self.per_stage.setdefault(name, StageUsage())

    def record(self, name: str, usage: Usage | None, depth: int, *, model: str | None = None,
               failed: bool = False) -> None:
        s = self.stage(name)
        s.calls += 1
        s.failed_calls += int(failed)
        s.round = max(s.round, depth)
        if usage is not None:
            s.prompt_tokens += usage.prompt_tokens
            s.completion_tokens += usage.completion_tokens
            if usage.cached_prompt_tokens is not None:
                s.cached_prompt_tokens = (s.cached_prompt_tokens or 0) + usage.cached_prompt_tokens
            s.latency_s += usage.latency_s
            s.cache_hits += int(bool(getattr(usage, "cached", False)))  # the judge's reply cache
        if model:
            self.models.add(model)

    def hit(self, name: str) -> None:
        self.stage(name).cache_hits += 1

    def add_prompts(self, template: str) -> None:
        self.add_infos(*infos(template))

    def add_infos(self, *found: PromptInfo) -> None:
        """Prompt ids/hashes already rendered elsewhere (the baselines render their own)."""
        for info in found:
            self.prompts.setdefault(info.id, info)

    def rounds(self) -> int:
        return max((s.round for s in self.per_stage.values() if s.calls), default=0)

    def summary(self, wall_s: float) -> UsageSummary:
        st = self.per_stage.values()
        return UsageSummary(calls=sum(s.calls for s in st), prompt_tokens=sum(s.prompt_tokens for s in st),
                            completion_tokens=sum(s.completion_tokens for s in st),
                            cached_prompt_tokens=_known_sum(s.cached_prompt_tokens for s in st),
                            latency_s=round(sum(s.latency_s for s in st), 3), wall_s=round(wall_s, 3),
                            rounds=self.rounds(), per_stage=dict(self.per_stage))


@dataclass
class Run:
    """Everything a stage needs about the verification in progress."""

    traj: Trajectory
    cfg: VerifierConfig
    judge: Judge
    cache: StageCache
    ledger: Ledger = field(default_factory=Ledger)
    rubric: Rubric | None = None
    provided_rubric: Rubric | None = None  # scored as given: no rubric call (verify(rubric=...))
    shared: str = ""  # shared prompt prefix (task, rubric, history, final answer)
    background: list[asyncio.Task] = field(default_factory=list)
    budget: Budget | None = None  # the judge's context (verifier.budget); None: not enforced
    evidence_text: tuple[str, str] = ("", "")  # (evidence as rendered, repeated text given once)
    history_cut: int = 0  # the most compressed history a call was sent (for result.history)
    trims: dict[tuple[str, tuple[str, ...]], CallTrim] = field(default_factory=dict)
    _shared_at: dict[int, str] = field(default_factory=dict)
    _bare: tuple[Rubric | None, str] | None = None

    def shared_bare(self) -> str:
        """The shared context without the action history (the relevance fan-out's: one call per
        screenshot), rendered once per rubric instead of once per call."""
        if self._bare is None or self._bare[0] is not self.rubric:
            self._bare = (self.rubric, shared_context(self.traj, self.cfg, self.rubric, with_history=False))
        return self._bare[1]

    def shared_at(self, cut: int) -> str:
        """The shared context with the history compressed to `cut` (rendered once per level)."""
        if cut not in self._shared_at:
            self._shared_at[cut] = shared_context(self.traj, self.cfg, self.rubric, cut=cut)
        return self._shared_at[cut]

    def reserve(self, output_model: type[BaseModel], sampling: Sampling | None) -> int:
        """Room kept for the reply (`budget.reply_reserve`) of the max_tokens the judge will ask for."""
        sizing = getattr(self.judge, "reply_budget", None)
        if callable(sizing):
            asked = int(sizing(output_model, sampling))
        else:
            floor = (sampling or Sampling()).max_tokens
            asked = reply_token_budget(json_schema_for(output_model), floor=floor, cap=max(floor, 8192))
        return reply_reserve(output_model, asked)

    async def fit(self, stage: str, system: str, shared: str, instructions: str, per_call: str,
                  images: list[ImagePart], output_model: type[BaseModel], sampling: Sampling | None, *,
                  own_shared: bool, lean_per_call: str | None, images_droppable: bool,
                  splittable: bool) -> tuple[str, str, list[ImagePart], int | None]:
        """Budget one call (`verifier.budget`): the parts to send, shrunk if needed, and the reply
        room when the prompt leaves less than the reserve; records cuts and lowered rooms."""
        if self.budget is None:
            return shared, per_call, images, None
        parts = Parts(system, shared, f"{JOB_HEADING}\n{instructions}" if instructions else "", per_call, images)
        shared_at = None if own_shared else self.shared_at
        reserve = self.reserve(output_model, sampling)
        got = await asyncio.to_thread(
            self.budget.fit, parts, reserve=reserve, stage=stage, shared_at=shared_at,
            lean_per_call=lean_per_call, images_droppable=images_droppable, splittable=splittable,
            floor=reply_floor(reserve))
        if got.cuts or got.reply_tokens is not None:
            self.record_trim(stage, got.cuts, got.tokens_before, got.tokens_after, got.dropped_images,
                             got.reply_tokens)
            self.history_cut = max(self.history_cut, got.history_cut)
        per_call = got.parts.per_call
        if got.dropped_images:  # the stage's text counts the screenshots that follow
            n = len(images)
            per_call = per_call.replace(f"final {n} distinct", f"final {n - got.dropped_images} distinct")
        return got.parts.shared, per_call, got.parts.images, got.reply_tokens

    def record_trim(self, stage: str, cuts: list[str], before: int = 0, after: int = 0, dropped: int = 0,
                    reply: int | None = None) -> None:
        t = self.trims.setdefault((stage, tuple(cuts)), CallTrim(stage=stage, cuts=list(cuts)))
        t.calls += 1
        t.tokens_before, t.tokens_after = max(t.tokens_before, before), max(t.tokens_after, after)
        t.screenshots_dropped = max(t.screenshots_dropped, dropped)
        if reply is not None:
            t.reply_tokens = reply if t.reply_tokens is None else min(t.reply_tokens, reply)

    def with_room(self, sampling: Sampling | None, room: int) -> Sampling:
        """`sampling` (or the judge's own) asking for at most `room` reply tokens."""
        base = sampling or getattr(getattr(self.judge, "config", None), "sampling", None)
        base = base if isinstance(base, Sampling) else Sampling()
        return base.model_copy(update={"reply_room": room})

    def spawn(self, coro: Any) -> asyncio.Task:
        """Start a concurrent stage call; `verify` cancels whatever is left if the run fails."""
        task = asyncio.ensure_future(coro)
        self.background.append(task)
        return task

    async def ask(self, stage: str, template: str, output_model: type[T], *, depth: int,
                  per_call: str = "", images: Iterable[ImagePart] = (), shared: str | None = None,
                  sampling: Sampling | None = None, variables: dict[str, Any] | None = None,
                  lean_per_call: str | None = None, images_droppable: bool = False,
                  splittable: bool = False) -> T:
        """One judge call. `template` is the stage's instructions (`prompts/<template>`), placed after
        the shared system prompt and context so that they do not break the shared prefix.

        Budgeted first against the judge's context (`fit`): `lean_per_call` is `per_call` with repeated
        evidence given once, `images_droppable` lets earlier final screenshots go (the last stays),
        `splittable` lets the stage split the call on `SplitNeeded`. Raises `ContextOverflowError`
        (a `JudgeError`) instead of sending a call that cannot fit."""
        instructions = render(template, **(variables or {}))
        self.ledger.add_prompts(SYSTEM_TEMPLATE)
        self.ledger.add_prompts(template)
        self.ledger.add_prompts("context.user.j2")
        system = system_prompt(self.rubric)
        full_ev, lean_ev = self.evidence_text
        if lean_per_call is None and full_ev and full_ev != lean_ev and full_ev in per_call:
            lean_per_call = per_call.replace(full_ev, lean_ev)  # budget step 3, for every stage that quotes it
        limits = limits_note(output_model)  # the judge is told every text field's limit; budgeted with the rest
        per_call = _with_limits(per_call, limits)
        lean_per_call = None if lean_per_call is None else _with_limits(lean_per_call, limits)
        ctx, per_call, shown, room = await self.fit(
            stage, system.text, self.shared if shared is None else shared, instructions.text, per_call,
            list(images), output_model, sampling, own_shared=shared is not None or not self.shared,
            lean_per_call=lean_per_call, images_droppable=images_droppable, splittable=splittable)
        if room is not None:  # the prompt left less than the reserve: ask for no more than is left
            sampling = self.with_room(sampling, room)
        msgs = messages(system, ctx, instructions.text, per_call, shown)
        try:
            reply = await self.judge.complete(msgs, output_model, stage=stage, sampling=sampling)
        except JudgeError as exc:
            self.ledger.record(stage, exc.usage if isinstance(exc.usage, Usage) else None, depth,
                               failed=True)
            raise
        self.ledger.record(stage, reply.usage, depth, model=reply.model)
        self.ledger.note_truncated(stage, reply.parsed)
        return reply.parsed

    def degrade(self, stage: str, reason: str | BaseException) -> None:
        self.ledger.degraded.append(DegradedStage.of(stage, reason))

    def vote_sampling(self, i: int) -> Sampling | None:
        """Independent votes need sampling diversity; V=1 keeps the judge's own sampling."""
        if self.cfg.votes == 1:
            return None
        base = getattr(getattr(self.judge, "config", None), "sampling", None)
        base = base if isinstance(base, Sampling) else Sampling()  # keep the judge's max_tokens/top_p
        return base.model_copy(update={"temperature": self.cfg.vote_temperature, "seed": 1000 + i})
