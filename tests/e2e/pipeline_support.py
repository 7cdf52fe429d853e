"""Helpers for the engine-tier pipeline tests: a spying judge wrapper, synthetic trajectories, and
the plumbing checks every real verification must pass (whatever the random model answered)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from PIL import Image, ImageDraw
from pydantic import BaseModel

from verifier.errors import JudgeError
from verifier.judge.base import Message, Reply, Sampling
from verifier.result import VerificationResult
from verifier.stages import STAGES
from verifier.trajectory import Screenshot, Step, Task, Trajectory

# Stages every verification runs with the default config (conditions only when groups are undecided,
# evidence only for screenshots that made some criterion's top-k, rubric only on a cache miss).
ALWAYS = {"relevance", "action_scoring", "side_effects", "reality", "rescoring", "outcome",
          "diagnosis_failures", "diagnosis_validity"}


@dataclass
class Call:
    stage: str
    images: list[str]  # content hashes of the screenshots sent
    output_model: type[BaseModel]
    ok: bool = False
    error: BaseException | None = None


@dataclass
class SpyJudge:
    """Delegates to the real judge and records what each stage sent and whether the reply parsed."""

    inner: object
    calls: list[Call] = field(default_factory=list)

    async def complete(self, messages: list[Message], output_model, *, stage: str,
                       sampling: Sampling | None = None) -> Reply:
        call = Call(stage, [p.screenshot.sha256 for m in messages for p in m.content if p.type == "image"],
                    output_model)
        self.calls.append(call)
        try:
            reply = await self.inner.complete(messages, output_model, stage=stage, sampling=sampling)
        except BaseException as exc:
            call.error = exc
            raise
        call.ok = isinstance(reply.parsed, output_model)
        return reply

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str):
        """The inner judge's other faces (`served_model`, `reply_budget`, `config`): the budget reads them."""
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def stages(self) -> set[str]:
        return {c.stage for c in self.calls}

    def images(self, stage: str) -> set[str]:
        return {h for c in self.calls if c.stage == stage for h in c.images}


def synthetic_trajectory(n_screens: int, *, task_id: str = "synthetic-long", seed: int = 0) -> Trajectory:
    """A finished run of `n_screens` steps, each with a distinct small screenshot (text drawn on it)."""
    shots, steps = [], []
    for i in range(1, n_screens + 1):
        img = Image.new("RGB", (400, 260), ((37 * i + seed) % 256, (91 * i) % 256, (53 * i + 7) % 256))
        draw = ImageDraw.Draw(img)
        draw.rectangle([20, 20, 380, 60], fill=(255, 255, 255))
        draw.text((30, 30), f"Trail search - page {i}", fill=(0, 0, 0))
        shots.append(Screenshot.from_image(img, step=i))
        action = ["visit_url", "type", "click", "scroll"][i % 4]
        steps.append(Step(index=i, action=action, arguments={"target": f"element {i}"},
                          thought=f"Step {i}: looking for the trail list.", url=f"https://example.test/p{i}"))
    return Trajectory(task=Task(id=task_id, instruction="Find a dog-friendly trail longer than 5 km near "
                                "Boulder and report its name."),
                      steps=steps, screenshots=shots, final_answer="Mesa Trail (6.7 km).",
                      source_format="native")


def assert_plumbing(result: VerificationResult, spy: SpyJudge, traj: Trajectory, *, model: str,
                    rubric_cached: bool = False) -> None:
    """Everything about a verification that does not depend on what the random model said."""
    assert isinstance(result, VerificationResult)
    assert VerificationResult.model_validate_json(result.model_dump_json()) == result  # round trip
    # A call either parsed into its output model or failed with a typed error that degraded its stage.
    degraded = {d.stage for d in result.degraded}
    for c in spy.calls:
        assert c.ok or (isinstance(c.error, JudgeError) and c.stage in degraded), (c.stage, repr(c.error))
    assert spy.stages() <= set(STAGES)
    expected = ALWAYS | ({"evidence"} if any(result.topk.values()) else set()) | (
        set() if rubric_cached else {"rubric"})
    assert expected <= spy.stages(), f"stages that never called the judge: {expected - spy.stages()}"
    # Every call is accounted, per stage, with tokens and the serving model's name.
    ran = {name: s.calls for name, s in result.usage.per_stage.items() if s.calls}
    assert ran == {st: sum(c.stage == st for c in spy.calls) for st in spy.stages()}
    assert result.usage.calls == len(spy.calls)
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    assert 1 <= result.usage.rounds <= 8
    assert result.models == [model]
    assert result.prompts, "prompt ids/versions must be recorded"
    # Screenshots really went to the judge: relevance saw every distinct screenshot; outcome saw some.
    assert spy.images("relevance") == set(traj.distinct_screenshots())
    assert spy.images("outcome"), "the outcome judge saw no screenshot"
    assert len(result.relevance.matrix) == len(traj.screenshots)
    for d in result.degraded:
        assert d.stage in STAGES and d.reason


def typed_judge_failure(reason: str | None) -> bool:
    """An unscored verdict whose reason is a typed judge error: raised outright (`Judge...Error`,
    `[stage] ...`), or a stage that fell back on one (`DegradedResult: ...`: a random-weight judge
    can write a reply that passes the grammar but not a cross-field rule, e.g. a critical-point
    violation without its screenshots, three times running)."""
    if not reason:
        return False
    if reason.startswith(("Judge", "[")):
        return True
    causes = re.findall(r"\bfell back \((\w*)", reason) if reason.startswith("DegradedResult: ") else []
    return bool(causes) and all(c.startswith("Judge") and c.endswith("Error") for c in causes)
