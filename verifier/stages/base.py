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

from ..cache import StageCache
from ..config import VerifierConfig
from ..errors import JudgeError
from ..judge.base import ImagePart, Judge, Sampling, Usage


def _known_sum(values: Iterable[int | None]) -> int | None:
    """Sum of the counts a server reported; None when it reported none of them."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None
from ..prompts import PromptInfo, render
from ..rendering import SYSTEM_TEMPLATE, infos, messages, system_prompt
from ..result import DegradedStage, StageUsage, UsageSummary
from ..schemas import Rubric
from ..trajectory import Trajectory

T = TypeVar("T", bound=BaseModel)


@dataclass
class Ledger:
    """Accounting for one verification (the pipeline's `verify()` and the baselines alike)."""

    per_stage: dict[str, StageUsage] = field(default_factory=dict)
    models: set[str] = field(default_factory=set)
    prompts: dict[str, PromptInfo] = field(default_factory=dict)
    degraded: list[DegradedStage] = field(default_factory=list)

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

    def spawn(self, coro: Any) -> asyncio.Task:
        """Start a concurrent stage call; `verify` cancels whatever is left if the run fails."""
        task = asyncio.ensure_future(coro)
        self.background.append(task)
        return task

    async def ask(self, stage: str, template: str, output_model: type[T], *, depth: int,
                  per_call: str = "", images: Iterable[ImagePart] = (), shared: str | None = None,
                  sampling: Sampling | None = None, variables: dict[str, Any] | None = None) -> T:
        """One judge call. `template` is the stage's instructions (`prompts/<template>`), placed after
        the shared system prompt and context so that they do not break the shared prefix."""
        instructions = render(template, **(variables or {}))
        self.ledger.add_prompts(SYSTEM_TEMPLATE)
        self.ledger.add_prompts(template)
        self.ledger.add_prompts("context.user.j2")
        msgs = messages(system_prompt(self.rubric), self.shared if shared is None else shared,
                        instructions.text, per_call, images)
        try:
            reply = await self.judge.complete(msgs, output_model, stage=stage, sampling=sampling)
        except JudgeError as exc:
            self.ledger.record(stage, exc.usage if isinstance(exc.usage, Usage) else None, depth,
                               failed=True)
            raise
        self.ledger.record(stage, reply.usage, depth, model=reply.model)
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
