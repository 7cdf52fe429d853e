"""`cua-verifier score PATH... --judge-url URL --model NAME --out results.jsonl`.

Scores trajectories on disk with the full Universal Verifier pipeline and appends one
`ScoreRecord` per trajectory to a JSONL log (flushed and fsync'ed per record). A PATH is a
trajectory (fara or Online-Mind2Web folder, native .json/.jsonl) or a folder of them.

Why resumable: a run is many judge calls and may be interrupted. Re-running the same command
skips ids already scored (the id is the trajectory's path, plus `#k` inside multi-record files)
and retries unscored ones. A trajectory that cannot be loaded or verified becomes an `unscored`
record with its reason; nothing a single trajectory does can lose finished work.

Exit status: 0 all scored, 3 some unscored, 2 bad usage or configuration.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import ConfigError, CuaVerifierError, JudgeUnavailableError, TrajectoryError

log = logging.getLogger(__name__)
Item = tuple[str, Callable[[], Any]]  # (id, thunk -> Trajectory)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("score", help="score trajectories with the Universal Verifier (resumable JSONL)",
                              description=__doc__.split("\n")[0])
    p.add_argument("paths", nargs="+", metavar="PATH", help="trajectory folder/file, or a folder of them")
    p.add_argument("--out", required=True, help="results JSONL (appended to; existing scored ids are skipped)")
    p.add_argument("--judge-url", help="OpenAI-compatible base URL(s), comma-separated (default: CUA_JUDGE_URL)")
    p.add_argument("--model", help="judge model name as served (default: CUA_JUDGE_MODEL)")
    p.add_argument("--config", help="JSON file with VerifierConfig fields (e.g. {\"votes\": 3})")
    p.add_argument("--votes", type=int, help="V: rescoring runs and outcome votes (odd)")
    p.add_argument("--top-k", type=int, help="screenshots analysed per criterion")
    p.add_argument("--concurrency", type=int, default=4, help="trajectories verified at once (default 4)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-demo", action="store_true",
                   help="fail instead of starting the CPU demo judge when no judge is configured")
    p.set_defaults(func=run)


def iter_items(paths: list[str]) -> Iterator[Item]:
    """(id, loader) for every trajectory under `paths`; unreadable entries still yield (and fail later)."""
    from ..loaders import detect_format, load_trajectories, load_trajectory

    for raw in paths:
        root = Path(raw)
        try:
            fmt = detect_format(root)
            children = [(root, fmt)]
        except TrajectoryError as exc:
            if not root.is_dir():
                yield root.as_posix(), (lambda e=exc: (_ for _ in ()).throw(e))
                continue
            children = []
            for child in sorted(root.iterdir()):
                try:
                    children.append((child, detect_format(child)))
                except TrajectoryError:
                    log.debug("skipping %s: not a trajectory", child)
        for child, fmt in children:
            if child.is_dir():
                yield child.as_posix(), (lambda c=child: load_trajectory(c))
            else:
                for k, traj in enumerate(load_trajectories(child)):
                    yield f"{child.as_posix()}#{k}", (lambda t=traj: t)


def build_config(args: argparse.Namespace) -> Any:
    from ..config import VerifierConfig

    values: dict[str, Any] = {}
    if args.config:
        try:
            values.update(json.loads(Path(args.config).read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read --config {args.config}: {exc}") from exc
    if args.votes is not None:
        values["votes"] = args.votes
    if args.top_k is not None:
        values["top_k"] = args.top_k
    try:
        return VerifierConfig(**values)
    except ValueError as exc:
        raise ConfigError(f"invalid verifier configuration: {exc}") from exc


def build_judge(args: argparse.Namespace) -> Any:
    from ..judge import JudgeConfig, Sampling, make_judge

    overrides: dict[str, Any] = {}
    if getattr(args, "demo_judge", False):  # a random-weight model fills every bounded string: give its replies room, keep images small
        overrides.update(sampling=Sampling(max_tokens=8192), image_max_side=224)
    if args.judge_url:
        overrides["base_urls"] = [u.strip() for u in args.judge_url.split(",") if u.strip()]
    if args.model:
        overrides["model"] = args.model
    if key_env := getattr(args, "judge_api_key_env", None):  # the demo judge's own key, never the user's
        overrides["api_key_env"] = key_env
    return make_judge(JudgeConfig.from_env(**overrides))


async def score_all(items: Iterator[Item], out: Path, judge: Any, config: Any, *, concurrency: int = 4,
                    progress: bool = True) -> dict[str, int]:
    """Score every item whose id is not already scored in `out`; returns this run's counts."""
    from tqdm.auto import tqdm

    from ..cache import StageCache
    from ..pipeline import verify
    from ..records import ResultWriter, ScoreRecord

    writer, cache = ResultWriter(out), StageCache()
    done = writer.done_ids()
    todo = []
    counts = {"scored": 0, "unscored": 0, "skipped": 0}
    for rid, thunk in items:
        if rid in done:
            counts["skipped"] += 1
        else:
            todo.append((rid, thunk))
    bar = tqdm(total=len(todo), disable=not progress, unit="traj", dynamic_ncols=True, desc="scoring")
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(rid: str, thunk: Callable[[], Any]) -> None:
        async with gate:
            t0 = time.monotonic()
            try:
                traj = await asyncio.to_thread(thunk)
                result = await verify(traj, config, judge=judge, cache=cache)
                rec = ScoreRecord(id=rid, status="scored", source=rid, result=result,
                                  duration_s=time.monotonic() - t0)
            except CuaVerifierError as exc:
                rec = ScoreRecord.unscored(rid, exc, source=rid, duration_s=time.monotonic() - t0)
            except Exception as exc:  # a bug in one trajectory must not lose the others' work
                log.exception("unexpected error while scoring %s", rid)
                rec = ScoreRecord.unscored(rid, exc, source=rid, duration_s=time.monotonic() - t0)
            writer.write(rec)
            counts[rec.status] += 1
            bar.update(1)
            bar.set_postfix(scored=counts["scored"], unscored=counts["unscored"], refresh=False)

    try:
        await asyncio.gather(*(one(rid, thunk) for rid, thunk in todo))
    finally:
        bar.close()
        writer.close()
    return counts


def _judge_configured(args: argparse.Namespace) -> bool:
    return bool(args.judge_url or os.environ.get("CUA_JUDGE_URL"))


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
    args.judge_api_key_env = getattr(demo, "api_key_env", None)
    print(f"demo judge ready at {demo.base_url} (log: {demo.log_path})", file=sys.stderr)
    return demo


def run(args: argparse.Namespace) -> int:
    demo = None
    try:
        config = build_config(args)
        if not _judge_configured(args) and not args.no_demo:
            demo = start_demo(args)
        args.demo_judge = demo is not None
        judge = build_judge(args)
    except (ConfigError, JudgeUnavailableError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        if demo is not None:
            demo.stop()
        return 2
    try:
        return _score(args, config, judge)
    finally:
        if demo is not None:
            demo.stop()
            from serving.demo import DEMO_WARNING

            print(DEMO_WARNING, file=sys.stderr)


def _score(args: argparse.Namespace, config: Any, judge: Any) -> int:

    async def main() -> dict[str, int]:
        try:
            return await score_all(iter_items(args.paths), Path(args.out), judge, config,
                                   concurrency=args.concurrency, progress=not args.no_progress)
        finally:
            await judge.aclose()

    counts = asyncio.run(main())
    from ..records import ResultWriter, format_summary, summarize

    print(f"this run: scored {counts['scored']}, unscored {counts['unscored']}, skipped (already scored) "
          f"{counts['skipped']} -> {args.out}")
    print(format_summary(summarize(ResultWriter(args.out).records())))
    return 3 if counts["unscored"] else 0
