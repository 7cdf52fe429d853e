"""`cua-verifier score-dataset SOURCE --out results.parquet|jsonl`: score many rollouts offline.

SOURCE is a folder of trajectories (any format `inspect` reads, one per sub-folder or file), a local
data file (.parquet/.json/.jsonl/.csv, read with `datasets`; native trajectory JSONL is read with the
project's own loader), or a `datasets` hub name (`--split`, `--streaming`). Rows may be
CUAVerifierBench rows, native trajectory records, rows with a `trajectory` column (JSON), or TRL-style
`prompt`/`completion` rows.

Why it is built this way: a large run is hours of judge calls and gets interrupted. Every finished
rollout is appended to a JSONL log and fsync'ed (`verifier.records.ResultWriter`); a restart skips
ids already scored and retries unscored ones, so a kill loses nothing and repeats nothing. Rollouts
run concurrently under `--concurrency` (the judge client adds its own per-endpoint limit); judge
failures, and files or lines that cannot be read, become `unscored` records with a reason, never
zero scores and never a crash. Sources, the scoring loop, the judge/verifier flags and the --config
format are shared with `score` (verifier/sources/, verifier/options.py). Prompt/completion rows are
read exactly as the training reward reads them (same adapter, same `answer_tools` setting).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from verifier.distributed.options import add_distributed_args
from verifier.errors import ConfigError, JudgeUnavailableError, TrajectoryError
from verifier.publish import add_publish_args, check_publish_args, publish_if_asked
from verifier.records import ResultWriter, format_summary, summarize
from verifier.sources.rows import (
    DATA_SUFFIXES,
    ID_COLUMNS,
    is_run_source,
    iter_folder,
    iter_rows,
    load_rows,
    log_path_for,
)

from ._options import (
    add_scoring_args,
    add_task_args,
    exit_status,
    missing_instruction_note,
    settings_overrides,
    single_run,
    task_options,
)
from ._preflight import check_judge, require
from ._sources import Item, Unscored, score_items
from ._stopping import run_stoppable

log = logging.getLogger(__name__)

DEFAULT_CONCURRENCY = 8


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("score-dataset", help="score a dataset / folder of rollouts (resumable)",
                              description=__doc__.split("\n")[0])
    p.add_argument("source", help="folder of trajectories, local .parquet/.json/.jsonl file, or hub dataset")
    p.add_argument("--out", required=True, help="results.parquet or results.jsonl")
    add_scoring_args(p, default_concurrency=DEFAULT_CONCURRENCY)
    add_task_args(p)
    p.add_argument("--split", default="train", help="dataset split (default: train)")
    p.add_argument("--name", help="dataset configuration name (hub datasets)")
    p.add_argument("--streaming", action="store_true", help="stream the dataset instead of downloading it")
    p.add_argument("--limit", type=int, help="only the first N rollouts of the source")
    p.add_argument("--id-column",
                   help=f"row id column (default: first of {', '.join(ID_COLUMNS)}, else the row number)")
    add_distributed_args(p)
    add_publish_args(p)
    p.set_defaults(func=run)


# ---- sources (read by verifier.sources.rows, shared with Ray and publish) -------------------------
def open_source(args: argparse.Namespace, answer_tools: Sequence[str] | None = None,
                outside: bool = False) -> tuple[Iterator[Item], int | None]:
    """The items of SOURCE and, when cheap to know, how many there are (for the progress bar)."""
    path = Path(args.source)
    total: int | None = None
    options = task_options(args)
    if is_run_source(path):
        items = single_run(iter_folder(path, outside, options), options)
        if not getattr(args, "no_progress", False):  # counted first, so the bar has a total
            from verifier.sources.count import count_items

            total = count_items([path])
    elif path.is_file() and path.suffix.lower() not in DATA_SUFFIXES:
        raise ConfigError(f"{path}: unsupported file type (use .parquet, .json, .jsonl, .csv or a folder)")
    else:
        ds = load_rows(args.source, split=args.split, name=args.name, streaming=args.streaming)
        total = len(ds) if hasattr(ds, "__len__") else None
        items = iter_rows(ds, args.source, args.id_column, answer_tools, outside)
    if args.limit:
        return islice(items, args.limit), min(args.limit, total) if total is not None else args.limit
    return items, total


# ---- scoring ----------------------------------------------------------------------------------
def build_settings(args: argparse.Namespace) -> Any:
    """RewardSettings from the environment, --config, then the flags (which win over both)."""
    from verifier.settings import RewardSettings

    settings = RewardSettings.from_env(**settings_overrides(args))
    if "max_concurrency" not in settings.model_fields_set:  # neither a flag nor a config file set it
        settings = settings.model_copy(update={"max_concurrency": DEFAULT_CONCURRENCY})
    return settings


async def _main(args: argparse.Namespace, settings: Any, stop: asyncio.Event | None = None) -> dict[str, Any]:
    from verifier.session import VerifierSession

    out = Path(args.out)
    writer = ResultWriter(log_path_for(out))
    session = VerifierSession(settings)

    async def verify_one(traj: Any) -> Any:
        outcome = await session.verify(traj)
        if outcome.error is not None:  # cached by the session: wrap it, do not re-raise it
            raise Unscored(outcome.error)
        return outcome.result

    try:
        judge = session.judge_for_loop()  # a missing judge URL / model fails now, not per rollout
        await asyncio.to_thread(check_judge, judge)  # ... and so does an unreachable judge
        outside = bool(settings.verifier.get("allow_outside_screenshots", False))
        items, total = open_source(args, settings.answer_tools, outside)
        if getattr(args, "shard", None):
            from verifier.distributed.shard import parse_shard, shard_items

            items, total = shard_items(items, *parse_shard(args.shard)), None
        counts = await score_items(items, writer, verify_one,
                                   concurrency=args.concurrency or settings.max_concurrency,
                                   progress=not args.no_progress, total=total, unit="rollout",
                                   none_if_degraded=settings.none_if_degraded, stop=stop)
    finally:
        await session.aclose()
        writer.close()
    return export(out, writer, counts)


def export(out: Path, writer: ResultWriter, counts: dict[str, int]) -> dict[str, Any]:
    """Write `out` from the results log, and the run's summary."""
    if out.suffix == ".parquet":
        writer.export_parquet(out)
    else:
        writer.export_jsonl(out)
    records = writer.records()
    return {"this_run": counts, **summarize(records), "instruction_note": missing_instruction_note(records)}


def check_dependencies(args: argparse.Namespace) -> None:
    """Optional packages this run will need, checked before any scoring (one line naming the extra)."""
    path = Path(args.source)
    if Path(args.out).suffix == ".parquet":
        require("score-dataset --out *.parquet", "bench", "pyarrow")
    if not is_run_source(path):
        require(f"score-dataset on {args.source} (a data file or hub dataset)", "bench", "datasets")


def _print_summary(summary: dict[str, Any], out: str, *, this_run: bool = True) -> None:
    c = summary["this_run"]
    if this_run:
        left = f", not started {c['not_started']}" if "not_started" in c else ""
        print(f"this run: scored {c['scored']}, unscored {c['unscored']}, already done {c['skipped']}{left}")
    print(format_summary(summary))
    if summary.get("instruction_note"):
        print(summary["instruction_note"], file=sys.stderr)
    print(f"results: {out}")


def run(args: argparse.Namespace, settings: Any = None) -> int:
    if Path(args.out).suffix not in (".parquet", ".jsonl"):
        print("error: --out must end in .parquet or .jsonl", file=sys.stderr)
        return 2
    if getattr(args, "ray", None) is not None and getattr(args, "prompts", None):
        print("error: --prompts does not reach Ray actors yet: score without --ray, or install the "
              "overlay's templates in the package the actors run", file=sys.stderr)
        return 2
    try:
        check_dependencies(args)
        check_publish_args(args)
        settings = settings or build_settings(args)
        from verifier.rubrics import RubricPlan

        rubrics = RubricPlan.of(settings.rubrics, settings.rubrics_only)  # a bad file scores nothing
        if getattr(args, "ray", None) is not None:
            from verifier.distributed.ray_backend import score_on_ray

            summary = score_on_ray(args, settings)
        else:
            result, stopped = run_stoppable(lambda stop: _main(args, settings, stop))
            if stopped.signals:
                print(stopped.describe(), file=sys.stderr)
            if result is None:  # abandoned mid-run: what was written is exported all the same
                out = Path(args.out)
                result = export(out, ResultWriter(log_path_for(out)), {"scored": 0, "unscored": 0, "skipped": 0})
            summary = result
            if stopped.exit_status is not None:
                _print_summary(summary, args.out, this_run=not stopped.abandoned)
                return stopped.exit_status
        published = publish_if_asked(args, settings)
    except (ConfigError, TrajectoryError, JudgeUnavailableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    c = summary["this_run"]
    _print_summary(summary, args.out)
    print(rubrics.describe())
    if published:
        print(f"scored dataset: {published['rows']} rows -> {published.get('folder') or published.get('pushed')}")
    return exit_status(c)
