"""`experiment run`: every arm scored R times on the same items, resumably and exactly once.

Layout of the output folder (the report reads only this):

    DIR/experiment.json          the spec's name, R and the resolved arms (content identities)
    DIR/items.json               the items and their human labels
    DIR/arms/<arm>/r<k>.jsonl    one `ScoreRecord` per item, repeat k (the `score` log format)
    DIR/runs.jsonl               one line per invocation: calls sent and shared, per arm

Each log is written by `verifier.sources.score_items`, the loop `score` uses: fsync'ed per record,
locked while a run writes it (a second run on DIR fails before any call), scored ids skipped and
unscored ones retried on a rerun. Repeats run one after another; within a repeat every arm runs at
once so that an arm's call identical to another's joins it in flight (`sharing`).
"""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..cache import StageCache
from ..prompts import prompt_overlay
from ..records import ResultWriter
from .arms import Arm
from .items import Item, ItemLabel, Loaded
from .sharing import SharedCallsJudge, Tally
from .spec import ExperimentSpecError

EXPERIMENT_FILE, ITEMS_FILE, RUNS_FILE = "experiment.json", "items.json", "runs.jsonl"


class ExperimentMeta(BaseModel):
    name: str
    repeats: int
    arms: list[Arm]


class ArmRun(BaseModel):
    """What one invocation did for one arm, over all repeats."""

    scored: int = 0
    unscored: int = 0
    skipped: int = 0
    calls_sent: int = 0
    calls_shared: int = 0


class RunLine(BaseModel):
    started: float
    finished: float
    stopped: bool = False
    arms: dict[str, ArmRun]

    @property
    def calls_saved(self) -> int:
        return sum(a.calls_shared for a in self.arms.values())


def log_path(out: Path, arm: str, repeat: int) -> Path:
    return out / "arms" / arm / f"r{repeat}.jsonl"


def prepare_folder(out: Path, meta: ExperimentMeta, items: list[Item]) -> None:
    """Write (or check against) DIR's experiment.json and items.json: a rerun must be the same
    experiment, or its repeats would mix two of them."""
    out.mkdir(parents=True, exist_ok=True)
    labels = [i.label.model_dump(mode="json") for i in items]
    exp_file, items_file = out / EXPERIMENT_FILE, out / ITEMS_FILE
    if exp_file.exists():
        old = ExperimentMeta.model_validate_json(exp_file.read_text(encoding="utf-8"))
        before = {a.name: a.fingerprint for a in old.arms}
        changed = [a.name for a in meta.arms if a.name in before and before[a.name] != a.fingerprint]
        if changed:
            raise ExperimentSpecError(f"{out} holds an earlier run in which arm(s) {changed} had other content "
                                      "(prompts, config or judge): use a new --out")
        if old.repeats > meta.repeats:
            meta = meta.model_copy(update={"repeats": old.repeats})
        kept = {a.name for a in meta.arms}
        meta = meta.model_copy(update={"arms": meta.arms + [a for a in old.arms if a.name not in kept]})
        old_ids = [d["id"] for d in json.loads(items_file.read_text(encoding="utf-8"))]
        if old_ids != [d["id"] for d in labels]:
            raise ExperimentSpecError(f"{out} holds an earlier run on other items: use a new --out")
    exp_file.write_text(meta.model_dump_json(indent=1) + "\n", encoding="utf-8")
    items_file.write_text(json.dumps(labels, indent=1) + "\n", encoding="utf-8")


def read_items(out: Path) -> list[ItemLabel]:
    return [ItemLabel.model_validate(d) for d in json.loads((out / ITEMS_FILE).read_text(encoding="utf-8"))]


def read_meta(out: Path) -> ExperimentMeta:
    return ExperimentMeta.model_validate_json((out / EXPERIMENT_FILE).read_text(encoding="utf-8"))


def _check_free(out: Path, arms: list[Arm], repeats: int) -> None:
    for arm in arms:
        for r in range(repeats):
            ResultWriter(log_path(out, arm.name, r)).check_free()


async def run_experiment(out: Path, arms: list[Arm], items: list[Item], repeats: int, *,
                         judge_for: Callable[[Arm], Any], concurrency: int = 4,
                         none_if_degraded: frozenset[str] = frozenset(), stop: asyncio.Event | None = None,
                         on_repeat: Callable[[int], None] | None = None) -> RunLine:
    """Score every (arm, repeat, item) not yet scored in `out`; returns (and appends) this run's line.

    `judge_for(arm)` gives the arm's judge; arms with the same `judge_key` get one client (asked
    once) and share identical calls within a repeat. Judges are closed at the end."""
    from ..pipeline import verify
    from ..sources import score_items

    _check_free(out, arms, repeats)  # a second run on DIR stops here, before any call
    started = time.time()
    judges: dict[str, Any] = {}
    for arm in arms:
        if arm.judge_key not in judges:
            judges[arm.judge_key] = judge_for(arm)
    tallies = {a.name: Tally() for a in arms}
    line = RunLine(started=started, finished=started, arms={a.name: ArmRun() for a in arms})
    try:
        for r in range(repeats):
            if stop is not None and stop.is_set():
                line.stopped = True
                break
            if on_repeat is not None:
                on_repeat(r)
            memo = StageCache()  # one per repeat: repeats never share a call

            async def one_arm(arm: Arm, r: int = r, memo: StageCache = memo) -> None:
                judge = SharedCallsJudge(judges[arm.judge_key], memo, identity=arm.judge_key, repeat=r,
                                         tally=tallies[arm.name])
                config, overlay, cache = arm.verifier_config(), arm.overlay(), StageCache()

                async def verify_one(loaded: Loaded) -> Any:
                    with prompt_overlay(overlay):
                        return await verify(loaded.traj, config, judge=judge, cache=cache, rubric=loaded.rubric)

                writer = ResultWriter(log_path(out, arm.name, r))
                try:
                    counts = await score_items(((i.label.id, i.label.source, i.thunk) for i in items), writer,
                                               verify_one, concurrency=concurrency, progress=False,
                                               none_if_degraded=none_if_degraded, stop=stop)
                finally:
                    writer.close()
                done = line.arms[arm.name]
                for k in ("scored", "unscored", "skipped"):
                    setattr(done, k, getattr(done, k) + counts.get(k, 0))

            await asyncio.gather(*(one_arm(a) for a in arms))
    finally:
        for judge in judges.values():
            close = getattr(judge, "aclose", None)
            if close is not None:
                await close()
        for name, t in tallies.items():
            line.arms[name].calls_sent, line.arms[name].calls_shared = t.sent, t.shared
        line.finished = time.time()
        line.stopped = line.stopped or bool(stop is not None and stop.is_set())
        _append(out / RUNS_FILE, line.model_dump_json() + "\n")
    return line


def _append(path: Path, text: str) -> None:
    """One small line at the end of a run (not worth a thread)."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def format_run(line: RunLine) -> str:
    """What the run did, per arm, with the calls saved by sharing."""
    rows = [f"{'arm':<24} {'scored':>7} {'unscored':>9} {'skipped':>8} {'calls sent':>11} {'shared':>8}"]
    for name, a in line.arms.items():
        rows.append(f"{name:<24} {a.scored:>7} {a.unscored:>9} {a.skipped:>8} {a.calls_sent:>11} {a.calls_shared:>8}")
    sent = sum(a.calls_sent for a in line.arms.values())
    total = sent + line.calls_saved
    pct = f" ({100 * line.calls_saved / total:.0f}% of {total})" if total else ""
    rows.append(f"judge calls saved by sharing unchanged stages between arms: {line.calls_saved}{pct}")
    if line.stopped:
        rows.append("stopped early: rerun the same command to finish (scored items are kept)")
    return "\n".join(rows)
