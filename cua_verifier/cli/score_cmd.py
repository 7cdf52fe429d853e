"""`cua-verifier score PATH... --judge-url URL --model NAME --out results.jsonl`.

Scores trajectories on disk with the full Universal Verifier pipeline and appends one
`ScoreRecord` per trajectory to a JSONL log (flushed and fsync'ed per record). A PATH is a
trajectory (fara or Online-Mind2Web folder, native .json/.jsonl) or a folder of them.

Why resumable: a run is many judge calls and may be interrupted. Re-running the same command
skips ids already scored and retries unscored ones. The id is the trajectory's path, resolved and
shown relative to the current folder when under it (so `score x`, `score ./x` and `score /abs/x`
share one id), plus `#k` inside multi-record files. A trajectory, file or JSONL line that cannot be
loaded or verified becomes an `unscored` record with its reason; nothing a single trajectory does
can crash the run or lose finished work. The results log is locked while a run writes it: a second
run on the same --out stops at once (exit 2). Sources and the loop are shared with `score-dataset`
(verifier/sources/), and so are the judge/verifier flags and the --config format (verifier/options.py).

Exit status (shared with `score-dataset`): 0 all scored, 3 some unscored, 2 bad usage,
configuration or input, a missing dependency, an unreachable judge or a results file in use.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import subprocess
import sys
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

from verifier.errors import ConfigError, JudgeUnavailableError

from ._options import (
    add_scoring_args,
    add_task_args,
    check_known_keys,
    concurrency_of,
    exit_status,
    missing_instruction_note,
    settings_overrides,
    single_run,
    task_options,
)
from ._sources import Item, display_path, iter_path
from ._stopping import run_stoppable

log = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("score", help="score trajectories with the Universal Verifier (resumable JSONL)",
                              description=__doc__.split("\n")[0])
    p.add_argument("paths", nargs="+", metavar="PATH", help="trajectory folder/file, or a folder of them")
    p.add_argument("--out", required=True, help="results JSONL (appended to; existing scored ids are skipped)")
    add_scoring_args(p, default_concurrency=4)
    add_task_args(p)
    p.add_argument("--no-demo", action="store_true",
                   help="fail instead of starting the CPU demo judge when no judge is configured")
    p.set_defaults(func=run)


def iter_items(paths: Iterable[str], *, allow_outside_screenshots: bool = False,
               options: dict[str, Any] | None = None) -> Iterator[Item]:
    """(id, source, loader) for every trajectory under `paths`; unreadable ones fail in the loader.
    `options`: --task-file / --instruction for the loaders (`_options.task_options`)."""
    for raw in paths:
        yield from iter_path(Path(raw), display_path, allow_outside_screenshots=allow_outside_screenshots,
                             task_options=options)


def count_paths(paths: Iterable[str]) -> int | None:
    """How many trajectories `iter_items(paths)` will give (None when not cheaply known): the bar's total."""
    from verifier.sources.count import count_items

    return count_items(Path(raw) for raw in paths)


def build_config(args: argparse.Namespace) -> Any:
    """The VerifierConfig from --config and the flags (which win); sets `args.settings` for the judge."""
    from verifier.config import VerifierConfig

    args.settings = settings_overrides(args)
    check_known_keys(args.settings)
    concurrency_of(args.settings, args)  # a bad value is a usage error now, not mid-run
    none_if_degraded_of(args.settings)
    try:
        return VerifierConfig(**args.settings.get("verifier", {}))
    except ValueError as exc:
        raise ConfigError(f"invalid verifier configuration: {exc}") from exc


def build_rubric_judge(args: argparse.Namespace) -> Any:
    """The judge that writes the rubrics no file provides, or None (the scoring judge writes them):
    its `rubric_judge` settings (--rubric-judge-url, --rubric-model) over the scoring judge's."""
    from verifier.judge import JudgeConfig, make_judge

    settings = getattr(args, "settings", None) or {}
    if not settings.get("rubric_judge"):
        return None
    from ._preflight import check_judge

    judge = make_judge(JudgeConfig.from_env(**{**(settings.get("judge") or {}), **settings["rubric_judge"]}))
    check_judge(judge)
    return judge


def build_judge(args: argparse.Namespace) -> Any:
    from verifier.judge import JudgeConfig, Sampling, make_judge

    overrides: dict[str, Any] = dict((getattr(args, "settings", None) or {}).get("judge") or {})
    if getattr(args, "demo_judge", False):  # a random-weight model fills every bounded string: give its replies room, keep images small
        overrides.update(sampling=Sampling(max_tokens=8192), image_max_side=224, preset="cpu-tiny")
    if key_env := getattr(args, "judge_api_key_env", None):  # the demo judge's own key, never the user's
        overrides["api_key_env"] = key_env
    from ._preflight import check_judge

    judge = make_judge(JudgeConfig.from_env(**overrides))
    check_judge(judge)  # unreachable or wrong key: one clear line now, not minutes of retries
    return judge


async def score_all(items: Iterable[Item], out: Path, judge: Any, config: Any, *, concurrency: int = 4,
                    progress: bool = True, none_if_degraded: Collection[str] | None = None,
                    total: int | None = None, stop: asyncio.Event | None = None, rubrics: Any = None,
                    rubric_judge: Any = None) -> dict[str, int]:
    """Score every item whose id is not already scored in `out`; returns this run's counts.

    `rubrics`: a `verifier.rubrics.RubricPlan` (the --rubrics file, --rubrics-only); `rubric_judge`:
    the judge that writes the rubrics the file does not provide (default: `judge`).
    `none_if_degraded`: the reward's setting (None: its default); such results are `unscored`.
    `total`: the number of items, for the progress bar (`verifier.sources.count`)."""
    from verifier.cache import StageCache
    from verifier.pipeline import verify
    from verifier.records import ResultWriter
    from verifier.rubrics import RubricPlan

    from ._sources import score_items

    writer, cache, plan = ResultWriter(out), StageCache(), rubrics or RubricPlan()

    async def verify_one(traj: Any) -> Any:
        kwargs = plan.verify_kwargs(traj.task, rubric_judge=rubric_judge)
        return await verify(traj, config, judge=judge, cache=cache, **kwargs)

    try:
        if none_if_degraded is None:
            none_if_degraded = none_if_degraded_of({})
        return await score_items(items, writer, verify_one, concurrency=concurrency, progress=progress,
                                 none_if_degraded=none_if_degraded, total=total, stop=stop)
    finally:
        writer.close()


def none_if_degraded_of(settings: dict[str, Any]) -> frozenset[str]:
    """`none_if_degraded` from --config, else the reward's default: one policy for both paths."""
    from verifier.settings import RewardSettings

    value = {"none_if_degraded": settings["none_if_degraded"]} if "none_if_degraded" in settings else {}
    try:
        return RewardSettings.model_validate(value).none_if_degraded
    except ValueError as exc:
        raise ConfigError(f"invalid none_if_degraded: {exc}") from exc


def _judge_configured(args: argparse.Namespace) -> bool:
    from verifier.settings import env_settings

    from_file = ((getattr(args, "settings", None) or {}).get("judge") or {}).get("base_urls")
    return bool(args.judge_url or from_file or env_settings().judge_url)


def start_demo(args: argparse.Namespace) -> Any:
    """No judge configured: start the CPU demo judge (random weights) and point `args` at it.

    Why: the README's first command must work on a fresh machine with no GPU. The verdicts of a
    random-weight model mean nothing, so the warning is printed before and after the run.
    """
    from serving.demo import DEMO_WARNING, start_demo_judge

    print(DEMO_WARNING, file=sys.stderr)
    print("starting the CPU demo judge (no --judge-url / CUA_JUDGE_URL given; --no-demo to refuse)...",
          file=sys.stderr)
    demo = start_demo_judge()
    args.judge_url, args.model = demo.base_url, demo.model
    if getattr(args, "settings", None) is None:
        args.settings = {}
    args.settings.setdefault("judge", {}).update(base_urls=[demo.base_url], model=demo.model)
    args.judge_api_key_env = getattr(demo, "api_key_env", None)
    print(f"demo judge ready at {demo.base_url} (log: {demo.log_path})", file=sys.stderr)
    return demo


def run(args: argparse.Namespace) -> int:
    demo = None
    try:
        if any(str(p).lower().endswith(".parquet") for p in args.paths):
            from ._preflight import require

            require("score on a .parquet file", "bench", "pyarrow")
        config = build_config(args)
        from verifier.records import ResultWriter
        from verifier.rubrics import RubricPlan

        # checked before anything starts: a bad rubric file scores nothing
        args.rubric_plan = RubricPlan.of(args.settings.get("rubrics"), bool(args.settings.get("rubrics_only")))

        ResultWriter(args.out).check_free()  # before minutes of demo start-up, not after
        if not _judge_configured(args) and not args.no_demo:
            demo = start_demo(args)
        args.demo_judge = demo is not None
        judge = build_judge(args)
        rubric_judge = build_rubric_judge(args)
    except (ConfigError, JudgeUnavailableError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        if demo is not None:
            demo.stop()
        return 2
    try:
        return _score(args, config, judge, rubric_judge)
    finally:
        if demo is not None:
            demo.stop()
            from serving.demo import DEMO_WARNING

            print(DEMO_WARNING, file=sys.stderr)


def _score(args: argparse.Namespace, config: Any, judge: Any, rubric_judge: Any = None) -> int:

    async def main(stop: asyncio.Event) -> dict[str, int]:
        try:
            options = task_options(args)
            items = single_run(iter_items(args.paths, allow_outside_screenshots=config.allow_outside_screenshots,
                                          options=options), options)
            total = None if args.no_progress else await asyncio.to_thread(count_paths, args.paths)
            return await score_all(items, Path(args.out), judge, config,
                                   concurrency=concurrency_of(args.settings, args),
                                   progress=not args.no_progress, total=total,
                                   none_if_degraded=none_if_degraded_of(args.settings), stop=stop,
                                   rubrics=args.rubric_plan, rubric_judge=rubric_judge)
        finally:
            await judge.aclose()
            if rubric_judge is not None:
                await rubric_judge.aclose()

    try:
        counts, stopped = run_stoppable(main)
    except ConfigError as exc:  # e.g. the results log is in use by another run
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from verifier.records import ResultWriter, format_summary, summarize

    if stopped.signals:
        print(stopped.describe(), file=sys.stderr)
    if counts is not None:
        left = f", not started {counts['not_started']}" if "not_started" in counts else ""
        print(f"this run: scored {counts['scored']}, unscored {counts['unscored']}, skipped (already scored) "
              f"{counts['skipped']}{left} -> {args.out}")
    records = ResultWriter(args.out).records()
    print(format_summary(summarize(records)))
    print(args.rubric_plan.describe())
    if note := missing_instruction_note(records):
        print(note, file=sys.stderr)
    if stopped.exit_status is not None or counts is None:
        return stopped.exit_status or 130
    return exit_status(counts)
