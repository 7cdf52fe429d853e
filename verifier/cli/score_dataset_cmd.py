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
failures become `unscored` records with a reason, never zero scores.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from ..errors import ConfigError, CuaVerifierError, TrajectoryError
from ..records import ResultWriter, ScoreRecord, format_summary, summarize

log = logging.getLogger(__name__)

ID_COLUMNS = ("id", "rollout_id", "trajectory_id", "task_id")
DATA_SUFFIXES = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv", ".arrow": "arrow"}
Item = tuple[str, str, Callable[[], Any]]  # (id, source description, thunk -> Trajectory)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("score-dataset", help="score a dataset / folder of rollouts (resumable)",
                              description=__doc__.split("\n")[0])
    p.add_argument("source", help="folder of trajectories, local .parquet/.json/.jsonl file, or hub dataset")
    p.add_argument("--out", required=True, help="results.parquet or results.jsonl")
    p.add_argument("--judge-url", help="OpenAI-compatible base URL(s), comma-separated (or CUA_JUDGE_URL)")
    p.add_argument("--model", help="judge model name as served (or CUA_JUDGE_MODEL)")
    p.add_argument("--config", help="JSON settings file (same format as CUA_VERIFIER_CONFIG)")
    p.add_argument("--split", default="train", help="dataset split (default: train)")
    p.add_argument("--name", help="dataset configuration name (hub datasets)")
    p.add_argument("--streaming", action="store_true", help="stream the dataset instead of downloading it")
    p.add_argument("--concurrency", type=int, default=8, help="rollouts verified at once (default 8)")
    p.add_argument("--limit", type=int, help="only the first N rollouts of the source")
    p.add_argument("--id-column",
                   help=f"row id column (default: first of {', '.join(ID_COLUMNS)}, else the row number)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


# ---- sources ----------------------------------------------------------------------------------
def _is_native_jsonl(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.read(1 << 16).lstrip()
        text = head.split("\n", 1)[0] if path.suffix == ".jsonl" else path.read_text(encoding="utf-8")
        first = json.loads(text)
    except (OSError, ValueError):
        return False
    return isinstance(first, dict) and isinstance(first.get("task"), dict)


def iter_folder(root: Path) -> Iterator[Item]:
    """Each trajectory under `root` (or `root` itself), keyed by its path relative to `root`."""
    from ..loaders import detect_format, load_trajectories, load_trajectory

    try:
        fmt = detect_format(root)
        children = [root]
    except TrajectoryError:
        children = sorted(root.iterdir())
        fmt = None
    for child in children:
        rel = "." if child == root else child.relative_to(root).as_posix()
        try:
            kind = fmt or detect_format(child)
        except TrajectoryError:
            log.debug("skipping %s: not a trajectory", child)
            continue
        if child.is_dir() and kind != "native":
            yield rel, str(child), lambda c=child: load_trajectory(c)
            continue
        for k, traj in enumerate(load_trajectories(child)):  # multi-trajectory files: parsed here
            yield f"{rel}#{k}", str(child), lambda t=traj: t


def row_to_trajectory(row: dict[str, Any], source: str) -> Any:
    """A dataset row of any supported shape -> `Trajectory`."""
    from ..loaders import load_cuavb_row, load_trajectory

    if "web_surfer_log" in row:
        return load_cuavb_row(row, source=source)
    if row.get("trajectory") is not None:
        from reward.adapters import as_trajectory

        return as_trajectory(row["trajectory"], field="trajectory")
    if "completion" in row and "prompt" in row:
        from reward.adapters import build_trajectories

        (traj,) = build_trajectories([row["prompt"]], [row["completion"]], {k: [v] for k, v in row.items()})
        if isinstance(traj, Exception):
            raise traj
        return traj
    return load_trajectory(row)


def load_rows(source: str, *, split: str, name: str | None, streaming: bool) -> Any:
    """A `datasets` (Iterable)Dataset from a local data file or a hub name."""
    import datasets  # lazy: the `train`/`bench` extras

    path = Path(source)
    if path.is_file():
        return datasets.load_dataset(DATA_SUFFIXES[path.suffix.lower()], data_files=str(path), split="train",
                                     streaming=streaming)
    return datasets.load_dataset(source, name, split=split, streaming=streaming)


def iter_rows(ds: Any, source: str, id_column: str | None) -> Iterator[Item]:
    seen: dict[str, int] = {}
    for i, row in enumerate(ds):
        col = id_column or next((c for c in ID_COLUMNS if row.get(c) not in (None, "")), None)
        if id_column and row.get(id_column) in (None, ""):
            raise ConfigError(f"row {i} has no value in --id-column {id_column!r}")
        rid = str(row[col]) if col else f"row-{i}"
        n = seen[rid] = seen.get(rid, 0) + 1
        rid = rid if n == 1 else f"{rid}#{n}"  # repeated ids stay distinct, deterministically
        desc = f"{source} row {i}"
        yield rid, desc, lambda r=row, d=desc: row_to_trajectory(r, d)


def open_source(args: argparse.Namespace) -> tuple[Iterator[Item], int | None]:
    """The items of SOURCE and, when cheap to know, how many there are (for the progress bar)."""
    path = Path(args.source)
    total: int | None = None
    if path.is_dir() or (path.is_file() and path.suffix.lower() in (".json", ".jsonl")
                         and _is_native_jsonl(path)):
        items = iter_folder(path)
    elif path.is_file() and path.suffix.lower() not in DATA_SUFFIXES:
        raise ConfigError(f"{path}: unsupported file type (use .parquet, .json, .jsonl, .csv or a folder)")
    else:
        ds = load_rows(args.source, split=args.split, name=args.name, streaming=args.streaming)
        total = len(ds) if hasattr(ds, "__len__") else None
        items = iter_rows(ds, args.source, args.id_column)
    if args.limit:
        return islice(items, args.limit), min(args.limit, total) if total is not None else args.limit
    return items, total


# ---- scoring ----------------------------------------------------------------------------------
def log_path_for(out: Path) -> Path:
    """The durable log: `results.jsonl` itself, or `results.parquet.records.jsonl` beside parquet."""
    return out if out.suffix == ".jsonl" else out.with_name(out.name + ".records.jsonl")


async def score_items(items: Iterator[Item], writer: ResultWriter, session: Any, *, concurrency: int,
                      progress: bool = True, total: int | None = None) -> dict[str, int]:
    """Score every item not already done; returns counts of this run (scored, unscored, skipped)."""
    from tqdm.auto import tqdm

    done = writer.done_ids()
    counts = {"scored": 0, "unscored": 0, "skipped": 0}
    queue: asyncio.Queue = asyncio.Queue(maxsize=2 * concurrency)
    bar = tqdm(total=total, disable=not progress, unit="rollout", dynamic_ncols=True, desc="scoring")

    async def one(rid: str, desc: str, thunk: Callable[[], Any]) -> ScoreRecord:
        t0 = time.monotonic()
        try:
            traj = await asyncio.to_thread(thunk)
            outcome = await session.verify(traj)
            err = outcome.error
        except CuaVerifierError as exc:  # bad trajectory: this row only
            outcome, err = None, exc
        except Exception as exc:  # a bug must not stop hours of scoring; it is recorded, not scored
            log.exception("unexpected error on %s", rid)
            outcome, err = None, exc
        dur = time.monotonic() - t0
        if err is None:
            return ScoreRecord(id=rid, status="scored", source=desc, result=outcome.result, duration_s=dur)
        return ScoreRecord.unscored(rid, err, source=desc, duration_s=dur)

    async def worker() -> None:
        while (item := await queue.get()) is not None:
            rec = await one(*item)
            writer.write(rec)
            counts[rec.status] += 1
            bar.update(1)
            bar.set_postfix(scored=counts["scored"], unscored=counts["unscored"], refresh=False)

    async def put(item: Any) -> None:
        """Enqueue, but fail fast if a worker died (e.g. the disk is full) instead of hanging."""
        task = asyncio.ensure_future(queue.put(item))
        await asyncio.wait({task, *workers}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            task.cancel()
            for w in workers:
                if w.done() and w.exception() is not None:
                    raise w.exception()
            raise RuntimeError("scoring workers stopped early")

    workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
    try:
        it = iter(items)
        while True:
            item = await asyncio.to_thread(next, it, None)
            if item is None:
                break
            if item[0] in done:
                counts["skipped"] += 1
                bar.update(1)
                continue
            await put(item)
        for _ in workers:
            await put(None)
        await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()
        bar.close()
    return counts


def build_settings(args: argparse.Namespace) -> Any:
    from reward.settings import RewardSettings

    overrides: dict[str, Any] = {"max_concurrency": args.concurrency}
    if args.config:
        try:
            overrides.update(json.loads(Path(args.config).read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--config {args.config}: {exc}") from exc
    judge = dict(overrides.pop("judge", None) or {})
    if args.judge_url:
        judge["base_urls"] = [u.strip() for u in args.judge_url.split(",") if u.strip()]
    if args.model:
        judge["model"] = args.model
    overrides["judge"] = judge
    return RewardSettings.from_env(**overrides)


async def _main(args: argparse.Namespace, settings: Any) -> dict[str, Any]:
    from reward.session import VerifierSession

    out = Path(args.out)
    writer = ResultWriter(log_path_for(out))
    session = VerifierSession(settings)
    try:
        session.judge_for_loop()  # a missing judge URL / model fails now, not per rollout
        items, total = open_source(args)
        counts = await score_items(items, writer, session, concurrency=args.concurrency,
                                   progress=not args.no_progress, total=total)
    finally:
        await session.aclose()
        writer.close()
    if out.suffix == ".parquet":
        writer.export_parquet(out)
    else:
        writer.export_jsonl(out)
    return {"this_run": counts, **summarize(writer.records())}


def run(args: argparse.Namespace, settings: Any = None) -> int:
    if Path(args.out).suffix not in (".parquet", ".jsonl"):
        print("error: --out must end in .parquet or .jsonl", file=sys.stderr)
        return 2
    try:
        settings = settings or build_settings(args)
        summary = asyncio.run(_main(args, settings))
    except (ConfigError, TrajectoryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    c = summary["this_run"]
    print(f"this run: scored {c['scored']}, unscored {c['unscored']}, already done {c['skipped']}")
    print(format_summary(summary))
    print(f"results: {args.out}")
    return 0
