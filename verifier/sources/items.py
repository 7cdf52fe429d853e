"""What `score` and `score-dataset` share: trajectories found on disk, and the resumable scoring loop.

Why one module: both commands promise the same thing (issue 3): a trajectory that cannot be
loaded or verified becomes an `unscored` record with its reason, and nothing one trajectory does
can crash the run or lose finished work. So source iteration never raises: a folder, file or JSONL
line that cannot be read yields an item whose loader raises that error, and the loop records it.
Native JSONL is read line by line, so one truncated line costs that line only.

It lived in the command line (`verifier/cli/_sources.py`); the Ray actors score through the same
loop, so it sits below the CLI, Ray and publishing (`verifier.sources`).

Ids: each item has a stable id (the resume key). Paths are normalised by the caller (`score`:
`display_path`, `score-dataset`: relative to SOURCE); records inside multi-record files add `#k`.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import CuaVerifierError, TrajectoryError
from ..records import ResultWriter, ScoreRecord, degraded_reason, degraded_stages

log = logging.getLogger(__name__)

Item = tuple[str, str, Callable[[], Any]]  # (id, source description, thunk -> Trajectory)


class Unscored(Exception):
    """Raised by a `verify_one` that already knows (and has logged) why a trajectory failed."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def display_path(path: str | os.PathLike[str]) -> str:
    """`path` resolved, shown relative to the cwd when under it: `x`, `./x` and `/abs/x` agree."""
    p = Path(path).resolve()
    try:
        rel = p.relative_to(Path.cwd().resolve())
    except ValueError:
        return p.as_posix()
    return rel.as_posix()  # "." for the cwd itself


def failing(rid: str, source: str, exc: BaseException) -> Item:
    """An item whose loader raises `exc`: the loop turns it into an unscored record."""
    def thunk() -> Any:
        raise exc

    return rid, source, thunk


def iter_path(root: Path, key: Callable[[Path], str], *, allow_outside_screenshots: bool = False,
              task_options: Mapping[str, Any] | None = None) -> Iterator[Item]:
    """Each trajectory at `root`: `root` itself if it is one, else each trajectory directly inside it
    (and OSWorld / BrowserGym run folders deeper down: OSWorld's results tree nests them 5 levels
    deep, AgentLab puts experiments inside a study folder, itself often inside a results folder).

    `key(path)` names an item; entries of a folder that are not trajectories are skipped (logged).
    `allow_outside_screenshots` and `task_options` (`task_file` / `instruction`, for formats that do
    not store the instruction) go to the loaders (see `verifier.loaders.load_trajectories`).
    """
    try:
        children = run_paths(root)
    except TrajectoryError as exc:
        yield failing(key(root), str(root), exc)
        return
    options = {k: v for k, v in (task_options or {}).items() if v is not None}
    for child in children:
        yield from _iter_one(child, key(child), allow_outside_screenshots, options)


def run_paths(root: Path) -> list[Path]:
    """The trajectory paths `iter_path` reads at `root` (runs, native files, parquet files), in
    order; raises `TrajectoryError` when `root` is neither one nor a readable folder of them."""
    from ..loaders import detect_format, find_runs

    try:
        detect_format(root)
        return [root]
    except TrajectoryError:
        if not root.is_dir():
            raise
    try:
        entries = sorted(root.iterdir())
    except OSError as err:
        raise TrajectoryError(f"cannot list folder: {err}", file=str(root)) from None
    children = []
    for child in entries:
        try:
            detect_format(child)
            children.append(child)
        except TrajectoryError:
            nested = find_runs(child) if child.is_dir() else []
            children.extend(nested)
            if not nested:
                log.debug("skipping %s: not a trajectory", child)
    return children


def _iter_one(path: Path, rid: str, outside: bool = False,
              options: Mapping[str, Any] | None = None) -> Iterator[Item]:
    from ..loaders import detect_format, load_trajectories, load_trajectory

    try:
        fmt = detect_format(path)
    except TrajectoryError as exc:
        yield failing(rid, str(path), exc)
        return
    if fmt == "native":
        yield from iter_native_file(path / "trajectory.json" if path.is_dir() else path, rid, outside)
    elif path.is_dir() or fmt == "browser-use":  # one run: one trajectory, loaded (and checked) by the worker
        yield rid, str(path), partial(load_trajectory, path, allow_outside_screenshots=outside, **(options or {}))
    else:  # e.g. a CUAVerifierBench parquet: many records, read lazily
        yield from _guarded(load_trajectories(path, allow_outside_screenshots=outside), rid, str(path))


def _guarded(trajs: Iterable[Any], rid: str, source: str) -> Iterator[Item]:
    """`rid#k` per trajectory; a loader error becomes the item at the index where it happened."""
    it, k = iter(trajs), 0
    while True:
        try:
            traj = next(it)
        except StopIteration:
            return
        except Exception as exc:  # noqa: BLE001 - a broken file must not stop the other sources
            yield failing(f"{rid}#{k}", source, exc)
            return
        yield f"{rid}#{k}", source, partial(_same, traj)
        k += 1


def _same(value: Any) -> Any:
    return value


def iter_native_file(path: Path, rid: str, outside: bool = False) -> Iterator[Item]:
    """One item per record of a native `.json` / `.jsonl` file; a bad line fails alone.

    A `.jsonl` file is read line by line: rows with inline screenshots run to tens of MB each, and
    a reader (a Ray actor reads the whole source to keep its shard) must hold one line, not the file.
    """
    base = os.path.abspath(path.parent)
    try:
        lines = _jsonl_lines(path) if path.suffix.lower() == ".jsonl" else iter([(None, path.read_text(encoding="utf-8"))])
        pending = next(lines, None)
    except (OSError, UnicodeDecodeError) as exc:
        yield failing(f"{rid}#0", str(path), TrajectoryError(f"cannot read trajectory file: {exc}",
                                                            file=str(path)))
        return
    k = 0
    while pending is not None:
        (no, line), pending = pending, None
        try:
            pending = next(lines, None)
        except (OSError, UnicodeDecodeError) as exc:  # mid-file: this line and the rest are lost, said so
            yield failing(f"{rid}#{k}", str(path), TrajectoryError(f"cannot read trajectory file: {exc}",
                                                                  file=str(path), line=no))
            return
        items = list(_records(path, base, rid, k, no, line, last=pending is None, outside=outside))
        del line  # parsed: while its rows are out, this frame holds neither its text nor its records
        k += len(items)
        while items:
            yield items.pop(0)


def _jsonl_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line, read one at a time."""
    with open(path, encoding="utf-8", newline="\n") as fh:
        for no, line in enumerate(fh, start=1):
            if not line.isspace():  # not `strip()`: a copy of a line of tens of MB
                yield no, line


def _records(path: Path, base: str, rid: str, k: int, no: int | None, line: str, *, last: bool,
             outside: bool) -> Iterator[Item]:
    """The items of one line (or of a whole `.json` file, `no` None), numbered from `k`."""
    from ..loaders import load_native_record

    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        hint = " (truncated last line?)" if no is not None and last else ""
        yield failing(f"{rid}#{k}", str(path), TrajectoryError(
            f"invalid JSON{hint}: {exc.msg}", file=str(path), line=no if no is not None else exc.lineno))
        return
    except RecursionError:  # nested ~1,000+ levels: that record fails alone, never the run
        from ..loaders._common import too_deep

        yield failing(f"{rid}#{k}", str(path), too_deep("trajectory file", file=str(path), line=no))
        return
    for record in data if (no is None and isinstance(data, list)) else [data]:
        yield (f"{rid}#{k}", str(path) if no is None else f"{path}:{no}",
               partial(load_native_record, record, base_dir=base, file=str(path), line=no,
                       allow_outside_screenshots=outside))
        k += 1


# ---- the scoring loop -------------------------------------------------------------------------
async def score_one(rid: str, desc: str, thunk: Callable[[], Any],
                    verify_one: Callable[[Any], Awaitable[Any]],
                    none_if_degraded: Collection[str] = ()) -> ScoreRecord:
    """Load and verify one item; any failure becomes its unscored record (the per-row function
    the local loop and the Ray actors share). A result degraded in a stage of `none_if_degraded`
    is unscored too (kept in the record, retried on rerun): the TRL reward's policy, offline."""
    t0 = time.monotonic()
    others: dict[str, Any] | None = None
    try:
        traj = await asyncio.to_thread(thunk)
        others = _other_verdicts(traj)
        result = await verify_one(traj)
        if weak := degraded_stages(result, none_if_degraded):
            return ScoreRecord(id=rid, status="unscored", reason=degraded_reason(result, weak), source=desc,
                               result=result, duration_s=time.monotonic() - t0, other_verdicts=others)
        return ScoreRecord(id=rid, status="scored", source=desc, result=result,
                           duration_s=time.monotonic() - t0, other_verdicts=others)
    except Unscored as exc:
        err: BaseException = exc.error
    except CuaVerifierError as exc:  # this trajectory only
        err = exc
    except Exception as exc:  # a bug must not stop hours of scoring; it is recorded, not scored
        log.exception("unexpected error on %s", rid)
        err = exc
    return ScoreRecord.unscored(rid, err, source=desc, duration_s=time.monotonic() - t0, other_verdicts=others)


def _drop_queued(queue: asyncio.Queue, counts: dict[str, int]) -> None:
    """Empty `queue` after a stop: what was queued and not started is left for the rerun."""
    counts.setdefault("not_started", 0)
    while not queue.empty():
        counts["not_started"] += queue.get_nowait() is not None


def _other_verdicts(traj: Any) -> dict[str, Any] | None:
    """The agent's claim / environment score a loaded trajectory carries (None when it has neither)."""
    others = traj.other_verdicts() if hasattr(traj, "other_verdicts") else None
    return others or None


async def score_items(items: Iterable[Item], writer: ResultWriter,
                      verify_one: Callable[[Any], Awaitable[Any]], *, concurrency: int,
                      progress: bool = True, total: int | None = None, unit: str = "traj",
                      none_if_degraded: Collection[str] = (), stop: asyncio.Event | None = None) -> dict[str, int]:
    """Score every item whose id is not already scored in `writer`; returns this run's counts.

    `verify_one(trajectory)` returns a result or raises (`Unscored(error)` for a failure it has
    already handled); any failure becomes an unscored record with its reason. A result that fell
    back in a stage of `none_if_degraded` (the reward's setting: the reward would be None) is
    recorded `unscored` with the result kept, so it is never averaged in and is retried on rerun.
    Items are pulled lazily (off the event loop) into a bounded queue, so a streamed dataset is
    never read ahead of the workers, and each record is written (fsync'ed) as soon as it is done.

    `stop` (set by a signal, `cua_verifier.cli._stopping`): no item is started after it is set;
    those queued are dropped (a rerun does them) and those in flight are finished and written.
    """
    from tqdm.auto import tqdm

    concurrency = max(1, concurrency)
    done = writer.done_ids()  # locks the log: a second run on the same file fails here, before any work
    if (msg := writer.bad_lines_message()) is not None:
        print(f"warning: {msg}", file=sys.stderr)
    counts = {"scored": 0, "unscored": 0, "skipped": 0}
    queue: asyncio.Queue = asyncio.Queue(maxsize=2 * concurrency)
    bar = tqdm(total=total, disable=not progress, unit=unit, dynamic_ncols=True, desc="scoring")

    async def worker() -> None:
        while (item := await queue.get()) is not None:
            rid, desc, thunk = item
            rec = await score_one(rid, desc, thunk, verify_one, none_if_degraded)
            writer.write(rec)
            counts[rec.status] += 1
            bar.update(1)
            bar.set_postfix(scored=counts["scored"], unscored=counts["unscored"], refresh=False)

    stopped = asyncio.ensure_future(stop.wait()) if stop is not None else None

    async def put(item: Any) -> bool:
        """Enqueue (False when `stop` came first), but fail fast if a worker died (e.g. the disk is
        full) instead of hanging."""
        task = asyncio.ensure_future(queue.put(item))
        await asyncio.wait({task, *workers, *([stopped] if stopped else [])}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return True
        task.cancel()
        for w in workers:
            if w.done() and (error := w.exception()) is not None:
                raise error
        if stopped is not None and stopped.done():
            return False
        raise RuntimeError("scoring workers stopped early")

    workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
    try:
        it = iter(items)
        while stop is None or not stop.is_set():
            item = await asyncio.to_thread(next, it, None)
            if item is None:
                break
            if item[0] in done:  # scored earlier, or earlier in this run (a path given twice)
                counts["skipped"] += 1
                bar.update(1)
                continue
            done.add(item[0])
            if not await put(item):
                break
        sent = 0
        while sent < len(workers):
            if stop is not None and stop.is_set():
                _drop_queued(queue, counts)
                for _ in workers:  # the queue is empty and holds 2x as many: extra sentinels are harmless
                    queue.put_nowait(None)
                break
            sent += await put(None)
        await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()
        if stopped is not None:
            stopped.cancel()
        bar.close()
    return counts
