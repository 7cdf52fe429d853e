"""Judge calls shared between experiment arms, never between repeats.

Why at the judge boundary, through `StageCache`: two arms that differ only in the outcome prompt
send byte-identical requests for every stage before outcome (same system prompt, same context,
same instructions, same screenshots), so a memo keyed by the *whole request* shares exactly the
calls whose inputs and prompt hashes did not change, and nothing else, whatever the stage. Keyed
by what is sent rather than by stage name, it needs no knowledge of the DAG (which stage reads
which prompt or which earlier reply), and it cannot share a call whose inputs moved. `StageCache`
gives the single flight: an arm that asks while the other arm's identical call is in flight waits
for that reply instead of sending a second request.

Repeats exist to sample the judge's run-to-run noise, so they must not share: the repeat index is
part of every key (one memo per repeat as well), and where the call is seeded (votes > 1 seed each
vote: `Run.vote_sampling`), repeat k > 0 shifts the seed, or a seeded judge would draw the same
sample R times. Repeat 0 sends exactly what `score` sends.

A shared reply is given back with ``usage.cached = True`` (counted in the stage's ``cache_hits``)
and its original token counts, so each arm's result still states what the arm costs on its own.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ..cache import StageCache
from ..judge.base import Message, Reply, Sampling
from ..judge.schema import json_schema_for

NAMESPACE = "experiment-call"
#: Repeat k > 0 adds k times this to a call's seed (large, so vote seeds 1000+i never collide).
REPEAT_SEED_STRIDE = 1_000_003


@dataclass
class Tally:
    """Calls one arm sent and the calls it got from another arm's identical request."""

    sent: int = 0
    shared: int = 0


def request_key(identity: str, repeat: int, stage: str, messages: list[Message], output_model: type[BaseModel],
                sampling: Sampling | None) -> str:
    """sha256 of everything that determines a reply, images by content hash, plus the repeat."""
    msgs = [{"role": m.role, "parts": [{"text": p.text} if p.type == "text"
                                       else {"image": p.screenshot.sha256, "label": p.label, "detail": p.detail}
                                       for p in m.content]} for m in messages]
    payload = {"judge": identity, "repeat": repeat, "stage": stage, "messages": msgs,
               "schema": json_schema_for(output_model),
               "sampling": None if sampling is None else sampling.model_dump(mode="json")}
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def repeat_sampling(sampling: Sampling | None, default: Any, repeat: int) -> Sampling | None:
    """The sampling of repeat `repeat`: a seeded call (its own seed or the judge's) gets a seed of its own."""
    if repeat == 0:
        return sampling
    base = sampling if sampling is not None else default
    if isinstance(base, Sampling) and base.seed is not None:
        return base.model_copy(update={"seed": base.seed + REPEAT_SEED_STRIDE * repeat})
    return sampling


class SharedCallsJudge:
    """A `Judge` that asks `inner` once per distinct request within one repeat (`memo`)."""

    def __init__(self, inner: Any, memo: StageCache, *, identity: str, repeat: int, tally: Tally) -> None:
        self.inner, self.memo, self.identity, self.repeat, self.tally = inner, memo, identity, repeat, tally

    def __getattr__(self, name: str) -> Any:  # config, reply_budget, prepare...: the inner judge's
        return getattr(self.inner, name)

    async def complete(self, messages: list[Message], output_model: type[BaseModel], *, stage: str,
                       sampling: Sampling | None = None) -> Reply:
        sampling = repeat_sampling(sampling, getattr(getattr(self.inner, "config", None), "sampling", None),
                                   self.repeat)
        key = request_key(self.identity, self.repeat, stage, messages, output_model, sampling)

        async def ask() -> Reply:
            self.tally.sent += 1
            return await self.inner.complete(messages, output_model, stage=stage, sampling=sampling)

        reply, hit = await self.memo.get_or_compute(NAMESPACE, key, ask)
        mine = reply.model_copy(deep=True)  # the stored reply stays as the judge gave it, whatever a stage does
        if hit:
            self.tally.shared += 1
            mine.usage.cached = True
        return mine

    async def aclose(self) -> None:
        """The inner judge is shared by arms and repeats: the runner closes it once."""
