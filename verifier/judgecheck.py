"""`check-judge`: probe a judge endpoint in seconds for what would make a real run fail.

Why: a user's first hour with a new judge is mostly misconfiguration (too few images per prompt, a
context too short for the largest call, a schema the structured-output backend rejects, a wrong
served model name), and each surfaced as unscored records after a long run (issue 19 §2). Each
check here prints one line with the fix (a `serve-judge` flag or a config key). A check a
non-vLLM endpoint cannot answer is "unknown", never "fail".

The facts (context, tokenizer, image cost) come from `verifier.judge.served`, the same module the
run's budget (`verifier.budget`) reads, so the check and the run agree; `score` calls
`refuse_doomed_run` before it starts.
"""
from __future__ import annotations

import asyncio
import io
import re
import time
from dataclasses import dataclass
from typing import Any, Literal

from PIL import Image
from pydantic import BaseModel

from .bounds import limits_note
from .budget import Budget, ContextOverflowError, Parts, reply_floor, reply_reserve
from .config import VerifierConfig
from .errors import ConfigError, JudgeError
from .judge.base import ImagePart, Message
from .judge.config import JudgeConfig
from .judge.probes import cache_counters, raw_call, read_metrics, tiny_png
from .judge.schema import json_schema_for, reply_token_budget
from .judge.served import ServedModel, discover_for
from .narrowing import for_call
from .rendering import JOB_HEADING, image_part, shared_context, system_prompt
from .schemas import (
    ActionScores,
    ConditionDecision,
    EvidenceBatch,
    FailureReport,
    Outcome,
    RealityCheck,
    RelevanceBatch,
    Rescoring,
    RubricDraft,
    SideEffects,
    TaskValidity,
)
from .trajectory import Screenshot, Step, Task, Trajectory

#: "warn": slower than it should be, but a run would not fail (the exit status ignores it).
Status = Literal["pass", "fail", "warn", "unknown"]
_IDS = ("c1", "c2", "c3")
_MAX_IMAGES = re.compile(r"At most (\d+) image", re.IGNORECASE)


@dataclass
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""

    def line(self) -> str:
        tail = f" -- fix: {self.fix}" if self.fix and self.status in ("fail", "warn") else ""
        return f"{self.status.upper():7} {self.name}: {self.detail}{tail}"


def stage_schemas() -> dict[str, type[BaseModel]]:
    """Every stage's output model as a run sends it (narrowed to a 3-criterion rubric)."""
    return {"rubric": RubricDraft, "relevance": for_call(RelevanceBatch, _IDS, (1,)),
            "evidence": for_call(EvidenceBatch, _IDS), "conditions": for_call(ConditionDecision, _IDS),
            "action_scoring": for_call(ActionScores, _IDS), "reality": for_call(RealityCheck, _IDS),
            "rescoring": for_call(Rescoring, _IDS),
            "side_effects": SideEffects, "outcome": Outcome, "diagnosis_failures": FailureReport,
            "diagnosis_validity": TaskValidity}


def images_per_call(cfg: VerifierConfig, traj: Trajectory | None) -> int:
    """The most images one call of the pipeline sends (relevance batches, final screenshots)."""
    n = max(cfg.relevance_batch_size, cfg.final_screenshots, 1)
    return min(n, len(traj.distinct_screenshots())) if traj is not None and traj.screenshots else n


def default_trajectory(steps: int = 50) -> Trajectory:
    """A plain long run for the context check when none is given (1280x800 screenshots; two
    pages alternate, which is all the check needs: only the final screenshots are sent)."""
    pages = []
    for shade in (60, 200):
        buf = io.BytesIO()
        Image.new("RGB", (1280, 800), (shade, 90, 160)).save(buf, format="PNG")
        pages.append(buf.getvalue())
    shots = [Screenshot.from_bytes(pages[i % 2], step=i) for i in range(steps + 1)]
    return Trajectory(
        task=Task(id="check-judge", instruction="Find the cheapest flight from Paris to Rome next Friday."),
        steps=[Step(index=i, action="click", arguments={"selector": f"#result-{i} > a.button"},
                    thought="The page lists flights; I compare prices and move to the next page. " * 4,
                    url=f"https://flights.example/search?page={i}") for i in range(1, steps + 1)],
        screenshots=shots, final_answer="The cheapest flight costs 49 EUR (Ryanair, 07:10).")


def largest_call(facts: ServedModel, judge_cfg: JudgeConfig, cfg: VerifierConfig, traj: Trajectory,
                 reserve: int) -> tuple[int, list[str], ContextOverflowError | None, int]:
    """(estimated prompt tokens as sent, shrink steps, overflow, reply room) of the rescoring call
    (the largest: shared context with the history, evidence, final screenshots), budgeted as a run
    would (the reply room may fall to `budget.reply_floor` before anything is cut)."""
    assert facts.context_tokens is not None
    budget = Budget(facts, facts.context_tokens, judge_cfg.image_max_side, judge_cfg.image_max_pixels)
    nums = sorted(max(v) for v in traj.distinct_screenshots().values())[-cfg.final_screenshots:] \
        if cfg.final_screenshots and traj.screenshots else []
    images: list[ImagePart] = [image_part(traj, n) for n in nums]
    evidence = "## Screenshot evidence\n" + "  Screenshot 1: shows: a results page | claims vs pixels: ok\n" * 15
    evidence += "\n\n" + limits_note(Rescoring)  # every call ends with its reply fields' limits (Run.ask)
    parts = Parts(system_prompt(None).text, shared_context(traj, cfg, None), JOB_HEADING + "\n" + "x" * 4000,
                  evidence, images)
    try:
        got = budget.fit(parts, reserve=reserve, stage="rescoring", floor=reply_floor(reserve),
                         shared_at=lambda c: shared_context(traj, cfg, None, cut=c), images_droppable=True)
    except ContextOverflowError as exc:
        return exc.needed - reply_floor(reserve), [], exc, reply_floor(reserve)
    return got.tokens_after, got.cuts, None, reserve if got.reply_tokens is None else got.reply_tokens


def _images_check(judge_cfg: JudgeConfig, n: int) -> Check:
    content = [{"type": "text", "text": "Describe."}] + [{"type": "image_url", "image_url": {"url": tiny_png()}}] * n
    status, text, _ = raw_call(judge_cfg, content)
    name = f"{n} image(s) in one call" if n > 1 else "image part accepted"
    if status == 200:
        return Check(name, "pass", "accepted")
    limit = _MAX_IMAGES.search(text)
    if limit:
        return Check(name, "fail", f"the server allows {limit.group(1)} image(s) per prompt; the pipeline sends "
                     f"up to {n}", f"serve-judge --max-images {max(n, 16)} (vLLM --limit-mm-per-prompt "
                     f"'{{\"image\": {max(n, 16)}}}'), or lower final_screenshots/relevance_batch_size")
    return Check(name, "fail", f"HTTP {status}: {text[:300]}",
                 "serve a vision-language model (serve-judge --preset ...) or check the endpoint")


async def _schema_checks(judge_cfg: JudgeConfig) -> list[Check]:
    from .judge.openai_compat import OpenAICompatJudge

    judge = OpenAICompatJudge(judge_cfg.model_copy(update={"transport_retries": 0, "reask_retries": 1,
                                                           "cache_dir": None, "breaker_failures": 0}))
    msgs = [Message.system("You test a JSON interface."),
            Message.user("Write one short, valid reply for this interface. Criterion ids are c1, c2, c3; "
                         "the only screenshot is number 1; the trajectory has 3 steps.")]

    async def one(stage: str, model: type[BaseModel]) -> Check:
        try:
            await judge.complete(msgs, model, stage=f"check:{stage}")
            return Check(f"schema {stage}", "pass", "accepted and answered validly")
        except JudgeError as exc:
            text = str(exc)
            if "max_model_len" in text or "context length" in text or "maximum context" in text:
                return Check(f"schema {stage}", "fail", f"the reply does not fit the context: {text[:240]}",
                             "serve-judge --max-model-len (a longer context), or a smaller config "
                             "max_tokens_cap")
            if "400" in text or "schema" in text.lower() or "grammar" in text.lower():
                return Check(f"schema {stage}", "fail", f"rejected: {text[:240]}",
                             "serve-judge --structured-outputs-backend guidance, or config "
                             "structured_output=json_object for a provider without json_schema")
            return Check(f"schema {stage}", "fail", f"{type(exc).__name__}: {text[:240]}",
                         "config max_tokens_cap / sampling.max_tokens large enough for the stage's reply")
    try:
        return list(await asyncio.gather(*(one(s, m) for s, m in stage_schemas().items())))
    finally:
        await judge.aclose()


def _prefix_cache_check(judge_cfg: JudgeConfig) -> Check:
    """Two calls with one long shared prefix: the second must be served partly from the cache.
    Off costs time (every call re-reads the shared system prompt and history), not verdicts: "warn"."""
    name = "prefix caching"
    before = read_metrics(judge_cfg)
    if before is None:
        return Check(name, "unknown", "no /metrics endpoint (not vLLM?)")
    q0, h0 = cache_counters(before)
    if q0 is None or h0 is None:
        return Check(name, "unknown", "/metrics reports no prefix-cache counters")
    prefix = "These are the shared principles of every call of a verification. " * 40
    for question in ("First question?", "Second question?"):
        raw_call(judge_cfg, [{"type": "text", "text": prefix + question}])
    q1 = h1 = None
    for _ in range(4):  # the engine publishes its counters after the step: give it a moment
        q1, h1 = cache_counters(read_metrics(judge_cfg) or "")
        if h1 is not None and h1 > h0:
            break
        time.sleep(0.5)
    if q1 is None or h1 is None:
        return Check(name, "unknown", "the prefix-cache counters vanished")
    if h1 - h0 <= 0:
        return Check(name, "warn", f"two calls sharing a ~{len(prefix) // 4}-token prefix: {q1 - q0:.0f} tokens "
                     "queried, none served from the cache (every call re-reads the shared prompt)",
                     "serve-judge enables it (vLLM --enable-prefix-caching)")
    return Check(name, "pass", f"{h1 - h0:.0f} of {q1 - q0:.0f} tokens of two calls sharing a prefix served "
                 "from the cache")


def run_checks(judge_cfg: JudgeConfig, cfg: VerifierConfig | None = None,
               trajectory: Trajectory | None = None) -> list[Check]:
    """Every check, in order; a model that is not served skips the calls that would only 404."""
    cfg = cfg or VerifierConfig()
    facts = discover_for(judge_cfg)
    out: list[Check] = []
    if facts.listed is None:
        out.append(Check("model listed", "unknown", "the server lists no models"))
    elif facts.listed:
        out.append(Check("model listed", "pass", f"{judge_cfg.model!r} is served ({facts.server_kind})"))
    else:
        served = ", ".join(facts.listed_models) or "nothing"
        out.append(Check("model listed", "fail", f"{judge_cfg.model!r} is not served (served: {served})",
                         f"pass --model {facts.listed_models[0] if facts.listed_models else 'NAME'} "
                         "(config key judge.model), or serve-judge --served-model-name "
                         f"{judge_cfg.model}"))
        return out
    status, text, latency = raw_call(judge_cfg, [{"type": "text", "text": "Say OK."}])
    if status != 200:
        out.append(Check("latency of one call", "fail", f"HTTP {status}: {text[:240]}",
                         "is the server up and the key right (api_key_env)?"))
        return out
    out.append(_context_check(facts, judge_cfg, cfg, trajectory))
    out.append(_images_check(judge_cfg, 1))
    n = images_per_call(cfg, trajectory)
    if n > 1:
        out.append(_images_check(judge_cfg, n))
    out.extend(asyncio.run(_schema_checks(judge_cfg)))
    out.append(_prefix_cache_check(judge_cfg))
    out.append(Check("latency of one call", "pass", f"{latency:.2f} s for a 1-token reply"))
    return out


def _context_check(facts: ServedModel, judge_cfg: JudgeConfig, cfg: VerifierConfig,
                   trajectory: Trajectory | None) -> Check:
    name = "largest prompt fits the context"
    if facts.context_tokens is None:
        return Check(name, "unknown", "the server reports no context length (set config judge.context_tokens "
                     "or judge.preset)")
    traj = trajectory or default_trajectory()
    model = for_call(Rescoring, _IDS)
    asked = reply_token_budget(json_schema_for(model), floor=judge_cfg.sampling.max_tokens,
                               cap=judge_cfg.max_tokens_cap)
    reserve = reply_reserve(model, asked)
    tokens, cuts, overflow, room = largest_call(facts, judge_cfg, cfg, traj, reserve)
    how = f"{facts.tokenizer_source} tokenizer, {len(traj.steps)} steps"
    if overflow is not None:
        fix = str(overflow).split("Fix: ", 1)[-1]
        return Check(name, "fail", f"the rescoring call needs {overflow.needed} tokens with its reply; the "
                     f"context is {facts.context_tokens} ({how})", fix)
    shrunk = f", after {', '.join(cuts)}" if cuts else ""
    return Check(name, "pass", f"{tokens} + {room} reply tokens of {facts.context_tokens}{shrunk} ({how})")


def refuse_doomed_run(judge: Any, trajectory: Trajectory | None = None, cfg: VerifierConfig | None = None) -> None:
    """Raise ConfigError before a run the facts say will fail: the model is not served, a vLLM
    server refuses the images one call sends (one 1-token probe), or the trajectory's largest
    call cannot fit the context even fully shrunk."""
    judge_cfg = getattr(judge, "config", None)
    if not isinstance(judge_cfg, JudgeConfig):
        return
    facts = discover_for(judge_cfg)
    if facts.listed is False:
        raise ConfigError(f"the judge does not serve {judge_cfg.model!r} (it serves "
                          f"{', '.join(facts.listed_models)}): pass --model with one of those, or serve "
                          f"with --served-model-name {judge_cfg.model}. `cua-verifier check-judge` checks it all")
    cfg = cfg or VerifierConfig()
    n = images_per_call(cfg, trajectory)
    if facts.server_kind == "vllm" and n > 1:  # one 1-token call with n tiny images: ~0.1 s on vLLM
        images = _images_check(judge_cfg, n)
        if images.status == "fail" and "per prompt" in images.detail:
            raise ConfigError(f"every rescoring and outcome call of this run would be refused: {images.detail}. "
                              f"Fix: {images.fix}")
    if facts.context_tokens is None or trajectory is None:
        return
    check = _context_check(facts, judge_cfg, cfg, trajectory)
    if check.status == "fail":
        raise ConfigError(f"this run cannot fit the judge's context: {check.detail}. Fix: {check.fix}")
