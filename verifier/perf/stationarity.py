"""Stationarity of the reward, measured (issue 36 §6): generated rubrics against a rubric file.

One fixed set of trajectories is scored R times by a stochastic judge (a seeded random scripted
judge: each run is a fresh process's judge at temperature > 0), once writing the rubric in every run
(what each rank, epoch or restart does today) and once reading it from a rubric file written once.
Per trajectory, the spread of its process score across the R runs is the reward's non-stationarity;
the file removes the rubric's share of it, and what is left is the scorer's own noise.

The judge: each rubric call draws 2-4 criteria of 1-6 points; each rescoring call gives every
criterion ``quality * 6 + noise`` points (half points, clamped by the pipeline to the criterion's
maximum), where ``quality`` is the trajectory's (named in its final answer) and noise has standard
deviation `score_noise`. So the same attempt earns a different share of a different rubric.

    python -m verifier.perf.stationarity --runs 20 --trajectories 8
"""
from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
from dataclasses import dataclass
from typing import Any

from ..cache import StageCache
from ..config import VerifierConfig
from ..pipeline import verify
from ..rubrics import RubricBook, RubricPlan
from ..stages.rubric import write_line
from ..testing import ScriptedJudge
from ..trajectory import Step, Task, Trajectory

_QUALITY = re.compile(r"quality (\d\.\d+)")


def noisy_judge(seed: int, score_noise: float = 0.05) -> ScriptedJudge:
    """A judge whose rubrics and scores are random draws (seeded): temperature > 0, reproducibly."""
    rng = random.Random(seed)

    def rubric(_m: Any, _o: Any) -> dict:
        n = rng.randint(2, 4)
        return {"stated_subgoals": ["do the task"], "self_audit": "drawn",
                "criteria": [{"name": f"criterion {i}", "description": "Full: done.", "max_points": rng.randint(1, 6)}
                             for i in range(n)]}

    def rescore(messages: Any, o: Any) -> dict:
        text = "\n".join(p.text for m in messages for p in m.content if hasattr(p, "text"))
        quality = float(q.group(1)) if (q := _QUALITY.search(text)) else 0.5
        items = []
        for c in o.expected_ids:
            earned = min(24.0, max(0.0, round(2 * (quality * 6 + rng.gauss(0, score_noise * 6))) / 2))
            items.append({"criterion_id": c, "evidence_tag": "consistent", "justification": "drawn",
                          "credit_basis": "evidence", "earned": earned})
        return {"items": items}

    return ScriptedJudge({"rubric": rubric, "rubric_audit": rubric, "rescoring": rescore}, model=f"noisy-{seed}")


def trajectories(n: int, tasks: int = 3) -> list[Trajectory]:
    """`n` fixed attempts at `tasks` tasks, each of its own quality (no screenshots: action-only)."""
    out = []
    for k in range(n):
        t = k % tasks
        out.append(Trajectory(task=Task(id=f"task-{t}", instruction=f"Find the opening hours of library {t}"),
                              steps=[Step(index=1, action="click", arguments={"x": k})],
                              final_answer=f"Done, quality {0.3 + 0.6 * k / max(n - 1, 1):.2f}"))
    return out


@dataclass
class Spread:
    """Per mode: each trajectory's process-score standard deviation across the runs."""

    generated: list[float]
    from_file: list[float]

    @property
    def variance_removed(self) -> float:
        """The share of the across-run variance the rubric file removes (1 - var_file / var_generated)."""
        g = statistics.fmean(s * s for s in self.generated)
        return 1.0 - statistics.fmean(s * s for s in self.from_file) / g if g else 0.0


async def measure(runs: int, n: int, *, score_noise: float = 0.05, seed: int = 0) -> Spread:
    """Score `n` trajectories `runs` times per mode; each run a fresh judge (seed + run) and cache."""
    trajs, cfg = trajectories(n), VerifierConfig()
    writer = noisy_judge(seed + 10_000, score_noise)
    lines = {}
    for t in trajs:
        if t.task.id not in lines:
            lines[t.task.id] = await write_line(t, cfg, writer)
    book = RubricBook(path="<memory>", sha256="", entries={k: (i, v) for i, (k, v) in enumerate(lines.items(), 1)})
    plan = RubricPlan(book=book, only=True)
    scores: dict[str, list[list[float]]] = {"generated": [[] for _ in trajs], "file": [[] for _ in trajs]}
    for r in range(runs):
        for mode in ("generated", "file"):
            judge, cache = noisy_judge(seed + r, score_noise), StageCache()
            for i, t in enumerate(trajs):
                kwargs = plan.verify_kwargs(t.task) if mode == "file" else {}
                res = await verify(t, cfg, judge=judge, cache=cache, **kwargs)
                scores[mode][i].append(float(res.process_score or 0.0))
    return Spread(generated=[statistics.pstdev(s) for s in scores["generated"]],
                  from_file=[statistics.pstdev(s) for s in scores["file"]])


def report(spread: Spread, runs: int) -> str:
    lines = [f"process-score spread per trajectory across {runs} runs (population std)",
             f"{'trajectory':>10}  {'generated':>9}  {'rubric file':>11}"]
    for i, (g, f) in enumerate(zip(spread.generated, spread.from_file, strict=True)):
        lines.append(f"{i:>10}  {g:>9.4f}  {f:>11.4f}")
    lines.append(f"{'mean':>10}  {statistics.fmean(spread.generated):>9.4f}  {statistics.fmean(spread.from_file):>11.4f}")
    lines.append(f"the rubric file removes {100 * spread.variance_removed:.1f}% of the across-run variance")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--trajectories", type=int, default=8)
    p.add_argument("--score-noise", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    spread = asyncio.run(measure(args.runs, args.trajectories, score_noise=args.score_noise, seed=args.seed))
    print(report(spread, args.runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
