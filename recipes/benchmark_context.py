"""Benchmark: the largest prompt per stage, in tokens, against a 32k judge context (issue 24).

Runs the real pipeline against `ScriptedJudge` on synthetic runs of M steps and M distinct 1280x800
screenshots (thoughts of about 300 characters, as browser agents write), twice per M: once with no
context known (the prompts as built) and once budgeted against the `qwen2.5-vl-7b` preset (32,768
tokens, each screenshot 1,282 tokens after the processor's resize). For each stage it prints the
largest prompt plus its reply budget, as built and as sent, and the shrink steps the budget took
("reply room": sent with less than its worst-case reply room, down to half, before any cut).

Token counts are the budget's own estimate: text at the conservative 2.5 characters per token it
assumes without a tokenizer endpoint (a real Qwen tokenizer averages about 4 on this text, so real
prompts are smaller), images by the Qwen2-VL resize rule. The scripted judge's evidence is short;
a real judge's is longer, which `drop_repeated_evidence` and `fewer_screenshots` absorb.

    python recipes/benchmark_context.py [--steps 20 50 100 150] [--preset qwen2.5-vl-7b]
"""
from __future__ import annotations

import argparse
import asyncio

from PIL import Image

from verifier import VerifierConfig, verify
from verifier.budget import Budget, Parts, reply_reserve
from verifier.errors import JudgeError
from verifier.judge.schema import json_schema_for, reply_token_budget
from verifier.judge.served import PRESET_LIMITS, CharBoundTokenizer, ServedModel
from verifier.testing import ScriptedJudge
from verifier.trajectory import Screenshot, Step, Task, Trajectory

THOUGHT = ("The results page lists several flights; the cheapest one departs too early, so I check the "
           "next page and compare the prices with the baggage fees included before choosing. ")


def synthetic(m: int) -> Trajectory:
    shots = [Screenshot.from_image(Image.new("RGB", (1280, 800), (i * 7 % 256, 60, 140)), step=i)
             for i in range(1, m + 1)]
    steps = [Step(index=i, action=["click", "type", "scroll"][i % 3],
                  arguments={"selector": f"#results > li:nth-child({i}) > a.select-button"},
                  thought=f"Step {i}. " + THOUGHT * 2, url=f"https://flights.example/search?page={i}")
             for i in range(1, m + 1)]
    return Trajectory(task=Task(id=f"ctx-{m}", instruction="Find the cheapest direct flight from Paris to Rome "
                                "next Friday and report its price and departure time."),
                      steps=steps, screenshots=shots, final_answer="Ryanair FR 1234, 07:10, 49 EUR.")


def _tokens(budget: Budget, request) -> int:
    system, user = request.messages
    texts = [p.text for p in user.content if p.type == "text"]
    parts = Parts(system.content[0].text, texts[0], texts[1] if len(texts) > 1 else "", "\n".join(texts[2:]),
                  [p for p in user.content if p.type == "image"])
    asked = reply_token_budget(json_schema_for(request.output_model), floor=2048, cap=8192)
    reserve = reply_reserve(request.output_model, asked)  # what the budget keeps free for the reply
    room = request.sampling.reply_room if request.sampling is not None else None  # or less, when lowered
    return budget.prompt_tokens(parts) + (reserve if room is None else room)


def largest(judge: ScriptedJudge, budget: Budget) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in judge.requests:
        out[r.stage] = max(out.get(r.stage, 0), _tokens(budget, r))
    return out


def run(m: int, preset: str) -> None:
    limits = PRESET_LIMITS[preset]
    served = ServedModel(model="bench", context_tokens=limits.max_model_len, context_source="preset",
                         image_limits=limits, preset=preset, tokenizer=CharBoundTokenizer())
    measure = Budget(served, 10**9, image_max_pixels=1_310_720)
    traj = synthetic(m)
    built = ScriptedJudge()
    asyncio.run(verify(traj, VerifierConfig(), judge=built))
    sent = ScriptedJudge()
    sent.served = served
    sent.config = type("Cfg", (), {"image_max_side": None, "image_max_pixels": 1_310_720})()
    try:
        result = asyncio.run(verify(traj, VerifierConfig(), judge=sent))
        trims: dict[str, list[str]] = {}
        for t in result.history.trims:
            trims.setdefault(t.stage, [])
            trims[t.stage] += [c for c in t.cuts if c not in trims[t.stage]]
            if t.reply_tokens is not None and "reply room" not in trims[t.stage]:
                trims[t.stage].append("reply room")
        failure = ""
    except JudgeError as exc:
        trims, failure = {}, f"  REFUSED: {exc}"
    before, after = largest(built, measure), largest(sent, measure)
    print(f"\nM = {m} steps and screenshots, context {limits.max_model_len} ({preset}); "
          "largest prompt + reply budget, in tokens")
    print(f"  {'stage':<20}{'as built':>10}{'as sent':>10}  cut")
    for stage in sorted(before, key=lambda s: -before[s]):
        mark = " OVER as built" if before[stage] > limits.max_model_len else ""
        mark += " OVER AS SENT" if after.get(stage, 0) > limits.max_model_len else ""
        print(f"  {stage:<20}{before[stage]:>10}{after.get(stage, 0):>10}  "
              f"{', '.join(trims.get(stage, [])) or '-'}{mark}")
    if failure:
        print(failure)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, nargs="+", default=[20, 50, 100, 150])
    ap.add_argument("--preset", default="qwen2.5-vl-7b", choices=sorted(PRESET_LIMITS))
    args = ap.parse_args()
    for m in args.steps:
        run(m, args.preset)


if __name__ == "__main__":
    main()
