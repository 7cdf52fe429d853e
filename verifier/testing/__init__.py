"""`ScriptedJudge`: a deterministic, offline `Judge` for tests (pipeline, reward, bench, e2e).

It answers per stage name ("rubric", "relevance", "evidence", ...; see `DEFAULTS`) and records
every request. A script entry is either a static answer or a callable
`(messages, output_model) -> answer`; an answer is a pydantic object, a dict (validated against the
requested output model) or an exception (raised, like a real judge failing after its retries).
Stages without a script get a schema-valid default, so the whole pipeline runs with no script::

    judge = ScriptedJudge({"outcome": {"primary_intent": "x", "reasoning": "no", "success": False}})
    result = await verify(trajectory, judge=judge)
    assert len(judge.requests_for("relevance")) == 4
    assert "<untrusted_trajectory_data_" in judge.text(judge.requests_for("evidence")[0])

An answer that does not validate raises `JudgeInvalidOutputError`, which is how tests simulate
"the replies stayed invalid after re-asking". Per-call models (from `verifier.narrowing.for_call`)
expose `expected_ids` / `expected_screenshots`, which the defaults use to answer completely.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import JudgeInvalidOutputError
from ..judge.base import ImagePart, Message, Reply, Sampling, TextPart, Usage

Answer = Any  # BaseModel | dict | BaseException | Callable[[list[Message], type[BaseModel]], Any]


@dataclass
class Request:
    """One recorded call."""

    stage: str
    messages: list[Message]
    output_model: type[BaseModel]
    sampling: Sampling | None
    started: float = 0.0  # time.perf_counter() when the call began
    finished: float | None = None  # ... and when it returned or raised


def _rubric(_m: Any, _o: Any) -> dict:
    return {"stated_subgoals": ["do the task", "report the result"],
            "criteria": [{"name": "Complete the task", "description": "Full: done. Partial: partly. "
                          "Zero: not done. Full credit if blocked by a visible login wall.", "max_points": 6},
                         {"name": "Report the result", "description": "Full: accurate report.", "max_points": 4}],
            "self_audit": "No phantom criteria, no overlaps."}


def _ids(o: type[BaseModel]) -> tuple[str, ...]:
    return getattr(o, "expected_ids", ())


DEFAULTS: dict[str, Callable[[list[Message], type[BaseModel]], Any]] = {
    "rubric": _rubric,
    "rubric_audit": _rubric,
    "relevance": lambda m, o: {"rows": [{"screenshot": s, "scores": [{"criterion_id": c, "score": 5}
                                                                       for c in _ids(o)]}
                                        for s in o.expected_screenshots]},
    "evidence": lambda m, o: {"items": [{"criterion_id": c, "visible": "scripted view",
                                         "claims_check": "consistent"} for c in _ids(o)]},
    "action_scoring": lambda m, o: {"items": [{"criterion_id": c, "justification": "scripted",
                                               "earned": 10} for c in _ids(o)]},
    "conditions": lambda m, o: {"items": [{"criterion_id": c, "reasoning": "scripted", "applies": True}
                                          for c in _ids(o)]},
    "reality": lambda m, o: {"notes": [{"criterion_id": c, "note": "none"} for c in _ids(o)]},
    "rescoring": lambda m, o: {
                               "items": [{"criterion_id": c, "evidence_tag": "consistent",
                                          "justification": "scripted", "credit_basis": "evidence",
                                          "earned": 10} for c in _ids(o)]},
    "side_effects": lambda m, o: {"reasoning": "none found", "penalties": []},
    "outcome": lambda m, o: {"primary_intent": "do the task", "reasoning": "scripted success", "success": True},
    "diagnosis_failures": lambda m, o: {"reasoning": "no failure", "failure_points": []},
    "diagnosis_validity": lambda m, o: {"reasoning": "clear task", "ambiguity_codes": []},
}


class ScriptedJudge:
    """Offline judge answering from `script` (stage -> answer or callable), else from `DEFAULTS`.

    Args:
        script: per-stage answers, see the module docstring.
        model: the model id reported in replies (and so in results).
        delays: per-stage seconds to sleep before answering, or a callable (messages) -> seconds
            (to exercise concurrency and streaming).
    """

    def __init__(self, script: dict[str, Answer] | None = None, *, model: str = "scripted-judge",
                 delays: dict[str, float | Callable[[list[Message]], float]] | None = None) -> None:
        self.script = dict(script or {})
        self.model = model
        self.delays = dict(delays or {})
        self.requests: list[Request] = []
        self.inflight = 0
        self.max_inflight = 0
        self.closed = False

    async def complete(self, messages: list[Message], output_model: type[BaseModel], *, stage: str,
                       sampling: Sampling | None = None) -> Reply:
        req = Request(stage, messages, output_model, sampling, started=time.perf_counter())
        self.requests.append(req)
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            delay = self.delays.get(stage, 0.0)
            await asyncio.sleep(delay(messages) if callable(delay) else delay)
            answer = self.script.get(stage, DEFAULTS.get(stage))
            if answer is None:
                raise JudgeInvalidOutputError("no scripted answer for this stage", stage=stage)
            if callable(answer) and not isinstance(answer, (BaseModel, BaseException)):
                answer = answer(messages, output_model)
            if isinstance(answer, BaseException):
                raise answer
            data = answer.model_dump(mode="json") if isinstance(answer, BaseModel) else answer
            try:
                parsed = output_model.model_validate(data)
            except ValidationError as exc:
                raise JudgeInvalidOutputError(f"scripted answer invalid: {exc}", stage=stage,
                                              last_reply=str(data)[:2000]) from exc
        finally:
            self.inflight -= 1
            req.finished = time.perf_counter()
        prompt_chars = sum(len(p.text) for msg in messages for p in msg.content if isinstance(p, TextPart))
        usage = Usage(prompt_tokens=prompt_chars // 4, completion_tokens=16, latency_s=0.001, attempts=1)
        return Reply(parsed=parsed, usage=usage, model=self.model, raw=parsed.model_dump_json())

    async def aclose(self) -> None:
        self.closed = True

    # ---- inspection helpers for tests -----------------------------------------------------------
    def requests_for(self, stage: str) -> list[Request]:
        return [r for r in self.requests if r.stage == stage]

    def stages(self) -> list[str]:
        return [r.stage for r in self.requests]

    @staticmethod
    def text(request: Request) -> str:
        """All text of a request (system + user), images shown as their labels."""
        out = []
        for msg in request.messages:
            for p in msg.content:
                out.append(p.text if isinstance(p, TextPart) else f"[image: {p.label or ''}]")
        return "\n".join(out)

    @staticmethod
    def images(request: Request) -> list[ImagePart]:
        return [p for msg in request.messages for p in msg.content if isinstance(p, ImagePart)]
