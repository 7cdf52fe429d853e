"""`cua-verifier rubrics SOURCE... --out rubrics.jsonl` and `cua-verifier rubrics --check FILE`.

Writes one rubric per distinct task of the sources (anything `score` reads, or a plain task list)
with the judge given here, which can be a stronger model than the one that scores. The file is the
reviewed artefact every entry point reads (`--rubrics FILE`, docs/rubrics.md): the same rubric on
every rank, epoch, restart and shard.

Resumable and exactly-once, like `score`: each line is fsync'ed as it is written, the file is
locked while a run writes it (a second run on it stops at once, exit 2), and a rerun writes only
the tasks still missing. A task whose rubric the judge could not write is reported and left for
the rerun. `--check FILE` holds a hand-edited file to the contracts and guards of a generated
one, naming line, task and field for each problem.

Exit status: 0 done (or the file checks clean); 3 some tasks have no rubric yet (rerun), or the
check overruled a grant (the file is usable, corrected); 2 bad usage, an unreadable source or
judge, a file in use, or a file that does not check.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from verifier.errors import ConfigError, JudgeError, JudgeUnavailableError

from ._options import add_task_args, concurrency_of, settings_overrides


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("rubrics", help="write one rubric per task to a rubric file, or --check one",
                              description=__doc__.split("\n")[0])
    p.add_argument("paths", nargs="*", metavar="SOURCE", help="trajectories (as `score` reads them) or task lists")
    p.add_argument("--out", help="rubric file (JSONL) to append to; tasks already in it are skipped")
    p.add_argument("--check", metavar="FILE", help="check a (hand-edited) rubric file and report every problem")
    p.add_argument("--judge-url", help="the rubric writer's base URL(s) (default: CUA_JUDGE_URL)")
    p.add_argument("--model", help="the rubric writer's model name (default: CUA_JUDGE_MODEL)")
    p.add_argument("--config", help="JSON/YAML settings: judge fields and verifier fields (rubric_audit)")
    p.add_argument("--rubric-audit", action="store_true", help="add the repairing audit call to each rubric")
    p.add_argument("--concurrency", type=int, help="rubrics written at once (default 8)")
    p.add_argument("--no-progress", action="store_true", help="no progress lines")
    p.set_defaults(func=run, default_concurrency=8, votes=None, top_k=None)
    add_task_args(p, instruction=False)


def check(path: str) -> int:
    from verifier.rubrics import check_lines

    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().split("\n")
    except OSError as exc:
        print(f"error: {path}: {exc}", file=sys.stderr)
        return 2
    entries, problems = check_lines(lines)
    for p in problems:
        print(p.text(path), file=sys.stderr if p.kind == "error" else sys.stdout)
    errors = sum(p.kind == "error" for p in problems)
    print(f"{path}: {len(entries)} task(s), {errors} error(s), {len(problems) - errors} overruled")
    return 2 if errors else (3 if problems else 0)


def run(args: argparse.Namespace) -> int:
    if args.check:
        return check(args.check)
    if not args.paths or not args.out:
        print("error: give SOURCE... and --out FILE (or --check FILE)", file=sys.stderr)
        return 2
    from verifier.config import VerifierConfig
    from verifier.rubrics import RubricWriter, instruction_sha256
    from verifier.sources.tasks import distinct_tasks

    from .score_cmd import build_judge

    try:
        args.settings = settings_overrides(args)
        verifier = {**args.settings.get("verifier", {}), **({"rubric_audit": True} if args.rubric_audit else {})}
        config = VerifierConfig(**verifier)
        concurrency = concurrency_of(args.settings, args)
        writer = RubricWriter(args.out)
        done = writer.written()  # takes the lock: a second run on --out stops here
        tasks, problems = distinct_tasks(args.paths, {"task_file": args.task_file} if args.task_file else None)
        todo = [t for t in tasks if t.id not in done]
        problems += [f"task {t.id!r}: {args.out} holds a rubric for another instruction (sha256 {done[t.id][:16]}, "
                     f"this one {instruction_sha256(t.instruction)[:16]}): remove its line to write it again"
                     for t in tasks if t.id in done and done[t.id] != instruction_sha256(t.instruction)]
        judge = build_judge(args) if todo else None
    except (ConfigError, JudgeUnavailableError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for p in problems:
        print(f"warning: {p}", file=sys.stderr)
    try:
        failed = asyncio.run(_write_all(todo, writer, judge, config, concurrency, not args.no_progress))
    finally:
        writer.close()
    print(f"rubrics: {len(tasks)} task(s), already written {len(tasks) - len(todo)}, written "
          f"{len(todo) - len(failed)}, failed {len(failed)} -> {args.out}")
    for task_id, why in failed:
        print(f"  no rubric for {task_id!r}: {why}", file=sys.stderr)
    return 3 if failed or problems else 0


async def _write_all(tasks: list[Any], writer: Any, judge: Any, config: Any, concurrency: int,
                     progress: bool) -> list[tuple[str, str]]:
    """Write each task's rubric (at most `concurrency` at once); returns (task id, why) per failure."""
    from verifier.cache import StageCache
    from verifier.stages.rubric import write_line
    from verifier.trajectory import Trajectory

    if not tasks:
        return []
    cache, gate, failed = StageCache(), asyncio.Semaphore(concurrency), []

    async def one(task: Any) -> None:
        async with gate:
            try:
                line = await write_line(Trajectory(task=task), config, judge, cache)
            except JudgeError as exc:
                failed.append((task.id, f"{type(exc).__name__}: {exc}"))
                return
            writer.write_rubric(line)  # durable before the next task is reported
            if progress:
                print(f"rubric written: {task.id}", file=sys.stderr)

    try:
        await asyncio.gather(*(one(t) for t in tasks))
    finally:
        await judge.aclose()
    return failed
