"""Score every benchmark task with each verifier, durably, then turn the records into a report.

Layout of an output folder (everything the report needs, so `--from-results` never calls a judge):
- ``bench_meta.json``: split, revision, human labels, the dataset's stored verdicts and
  inter-annotator statistics, written once before scoring starts;
- ``results_<verifier>.jsonl``: one `ScoreRecord` per task (`verifier.records.ResultWriter`),
  appended and fsync'ed as each finishes; a rerun skips tasks already ``scored`` and retries the rest;
- ``report.*`` and the PNGs, rewritten at the end of every run.

A task the verifier could not score (bad trajectory, judge outage) is recorded ``unscored`` with its
reason and counted as such in the report, never as a failure verdict.
"""
from __future__ import annotations

import asyncio
import json
import logging
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..errors import CuaVerifierError, TrajectoryError
from ..records import ResultWriter, ScoreRecord, result_field
from ..rubrics import sources_line
from .dataset import REVISION, BenchTask, iter_annotation_labels
from .labels import HumanLabels, Verdict, agreement_table
from .metrics import InterAnnotator, inter_annotator
from .report_tables import ReportInputs, UsageRow

log = logging.getLogger(__name__)

VerifyFn = Callable[[Any, Any], Awaitable[Any]]  # (trajectory, judge) -> VerificationResult

#: Verifiers whose result carries a real process score (the baselines only give a verdict).
HAS_PROCESS_SCORE = {"uv"}


def verifier_fn(name: str, *, config: Any = None, options: dict[str, Any] | None = None) -> VerifyFn:
    """The async scoring function behind a `--verifiers` name (imported lazily).

    `config` is the UV's `VerifierConfig`; `options` are keyword arguments for a baseline
    (e.g. ``{"last_n": 10}`` for webvoyager, ``{"threshold": 4}`` for webjudge).
    """
    opts = dict(options or {})
    if name == "uv":
        from ..pipeline import verify

        async def run_uv(traj, judge):
            return await verify(traj, config, judge=judge)
        return run_uv
    if name == "webjudge":
        from ..baselines.webjudge import verify_webjudge

        return lambda traj, judge: verify_webjudge(traj, judge, **opts)
    if name == "webvoyager":
        from ..baselines.webvoyager import verify_webvoyager

        return lambda traj, judge: verify_webvoyager(traj, judge, **opts)
    raise ValueError(f"unknown verifier {name!r}; expected uv, webjudge or webvoyager")


class BenchMeta(BaseModel):
    split: str
    revision: str = REVISION
    source: str
    labels: list[HumanLabels]
    stored_verdicts: list[Verdict] = Field(default_factory=list)
    inter_annotator: dict[str, InterAnnotator] = Field(default_factory=dict)


def build_meta(tasks: list[BenchTask], *, split: str, source: str) -> BenchMeta:
    ia: dict[str, InterAnnotator] = {}
    for key, column in (("outcome", "human_judgement_outcome"), ("process", "human_judgement_process")):
        labels = iter_annotation_labels(tasks, column)
        if any(len(v) >= 2 for v in labels.values()):
            ia[key] = inter_annotator(labels)
    return BenchMeta(split=split, source=source, labels=[t.labels for t in tasks],
                     stored_verdicts=[v for t in tasks for v in t.stored_verdicts()], inter_annotator=ia)


def results_path(out: Path, name: str) -> Path:
    return out / f"results_{name}.jsonl"


async def score_all(tasks: list[BenchTask], name: str, fn: VerifyFn, judge: Any, out: Path, *,
                    concurrency: int = 4, progress: bool = True) -> Counter:
    """Score the tasks not yet scored by `name`; returns a Counter of statuses written this run."""
    writer = ResultWriter(results_path(out, name))
    done = writer.done_ids()
    todo = [t for t in tasks if t.task_id not in done]
    counts: Counter = Counter(skipped=len(tasks) - len(todo))
    sem = asyncio.Semaphore(max(1, concurrency))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc=f"bench {name}", unit="traj")

    async def one(task: BenchTask) -> None:
        async with sem:
            start = time.perf_counter()
            source = f"{task.split}/{task.task_id}"
            try:
                traj = task.trajectory()
                if traj.steps and not traj.screenshots:  # e.g. most of the internal split: data missing
                    raise TrajectoryError("the dataset row has actions but no screenshots", field="screenshots")
                result = await fn(traj, judge)
                rec = ScoreRecord(id=task.task_id, status="scored", source=source, result=result)
            except (CuaVerifierError, ValueError) as exc:  # bad data or judge failure: unscored, not zero
                rec = ScoreRecord.unscored(task.task_id, exc, source=source)
            except Exception as exc:  # a bug on one trajectory must not lose a long run: record, log, go on
                log.exception("%s crashed on %s", name, task.task_id)
                rec = ScoreRecord.unscored(task.task_id, exc, source=source)
            rec.duration_s = time.perf_counter() - start
            writer.write(rec)
            counts[rec.status] += 1
            if bar is not None:
                bar.update(1)

    try:
        await asyncio.gather(*(one(t) for t in todo))
    finally:
        writer.close()
        if bar is not None:
            bar.close()
    return counts


def _categories(result: dict[str, Any]) -> list[str]:
    cats = result_field(result, "diagnosis.categories") or []
    out = []
    for c in cats:
        out.append(c if isinstance(c, str) else str(c.get("category") or c.get("name") or c))
    return out


def load_results(out: Path, name: str) -> tuple[list[Verdict], UsageRow | None, dict[str, int]]:
    """Verdicts (None for unscored), cost per trajectory and taxonomy counts from a results log."""
    verdicts, usage, cats = [], [], Counter()
    for rec in ResultWriter(results_path(out, name)).records():
        res = rec.result_dict() if rec.status == "scored" else None
        if res is None:
            verdicts.append(Verdict(task_id=rec.id, verifier=name))
            continue
        score = result_field(res, "process_score") if name in HAS_PROCESS_SCORE else None
        verdicts.append(Verdict(task_id=rec.id, verifier=name, outcome_success=result_field(res, "outcome_success"),
                                process_score=score))
        u = res.get("usage") or {}
        usage.append((u.get("calls", 0), u.get("prompt_tokens", 0), u.get("completion_tokens", 0),
                      u.get("latency_s", 0.0), u.get("wall_s") or rec.duration_s or 0.0))
        cats.update(_categories(res))
    row = None
    if usage:
        calls, pt, ct, lat, wall = zip(*usage)
        row = UsageRow(verifier=name, n=len(usage), calls_mean=statistics.fmean(calls),
                       prompt_tokens_mean=statistics.fmean(pt), completion_tokens_mean=statistics.fmean(ct),
                       latency_s_mean=statistics.fmean(lat), latency_s_p50=statistics.median(lat),
                       latency_s_max=max(lat), wall_s_mean=statistics.fmean(wall))
    return verdicts, row, dict(cats)


def report_inputs(out: Path, *, threshold: float = 0.8, n_boot: int = 1000, seed: int = 0) -> ReportInputs:
    """Rebuild everything the report needs from an output folder (no judge calls)."""
    meta_path = out / "bench_meta.json"
    if not meta_path.is_file():
        raise FileNotFoundError(f"{meta_path} not found: not a `cua-verifier bench --out` folder")
    meta = BenchMeta.model_validate(json.loads(meta_path.read_text(encoding="utf-8")))
    verdicts, usage, taxonomy = list(meta.stored_verdicts), [], {}
    names = sorted(p.name[len("results_"):-len(".jsonl")] for p in out.glob("results_*.jsonl"))
    for name in names:
        v, u, cats = load_results(out, name)
        verdicts += v
        if u is not None:
            usage.append(u)
        if cats:
            taxonomy[name] = cats
    rows = agreement_table(verdicts, meta.labels, threshold=threshold, n_boot=n_boot, seed=seed)
    notes = [f"data: microsoft/CUAVerifierBench@{meta.revision} ({meta.source}), {len(meta.labels)} tasks",
             "stored verdicts are the ones published in the dataset; the others were scored in this run",
             "the baselines give an outcome verdict only, so they have no process rows"]
    for name in names:  # which rubrics each verifier's results were scored against (issue 36 §5)
        used = sources_line(result_field(r.result_dict(), "rubric_source")
                            for r in ResultWriter(results_path(out, name)).records() if r.status == "scored")
        if used:
            notes.append(f"{name} {used}")
    return ReportInputs(split=meta.split, threshold=threshold, n_boot=n_boot, seed=seed, rows=rows,
                        verdicts=verdicts, labels=meta.labels, usage=usage, taxonomy=taxonomy,
                        inter_annotator=meta.inter_annotator, notes=notes)
