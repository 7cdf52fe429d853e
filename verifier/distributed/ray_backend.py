"""`score-dataset --ray`: verify on a pool of async Ray actors, writing results as they finish.

Design:
- The source is read as the local command reads it; data files and hub datasets stream through
  Ray Data (`read_parquet` / `read_json` / `read_csv` / `from_huggingface`), folders through the
  project's loaders. Rows already scored in the output log are skipped (resume).
- Each actor holds one `VerifierSession` (one stage cache, its own judge client to the shared
  judge replicas) and runs many verifications at once (async actor). A rollout goes to actor
  `stable_bucket(task_id, N)`, so a task's rubric is written once.
- The driver keeps a bounded number of rows in flight, writes each record (fsync) as its future
  completes, and owns the only writer: a record exists once or not at all.
- An actor that dies (killed, OOM, node lost) fails its in-flight futures; the driver replaces it
  and resubmits exactly those rows (up to `MAX_ATTEMPTS`, then an unscored record), so no row is
  lost and none is written twice.
"""
from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..records import ResultWriter, ScoreRecord, summarize
from ..sources.items import Unscored, score_one
from .shard import keyed, parse_shard, stable_bucket

MAX_ATTEMPTS = 3
PER_ACTOR_INFLIGHT = 16


class VerifierActor:
    """One stage cache and judge client; `score` is async, so one actor verifies many rows at once."""

    def __init__(self, settings: Any) -> None:
        from ..session import VerifierSession

        self.session = VerifierSession(settings)

    async def score(self, rid: str, desc: str, thunk: Callable[[], Any]) -> str:
        async def verify_one(traj: Any) -> Any:
            outcome = await self.session.verify(traj)
            if outcome.error is not None:
                raise Unscored(outcome.error)
            return outcome.result

        record = await score_one(rid, desc, thunk, verify_one, self.session.settings.none_if_degraded)
        return record.to_json_line()

    def pid(self) -> int:
        return os.getpid()


class ActorPool:
    """N actors by bucket; a dead one is replaced (once) by whoever notices first."""

    def __init__(self, settings: Any, n: int, cpus: float) -> None:
        import ray

        self._cls = ray.remote(VerifierActor).options(num_cpus=cpus, max_concurrency=PER_ACTOR_INFLIGHT * 4)
        self.settings = settings
        self.actors = [self._cls.remote(settings) for _ in range(n)]
        self.restarts = 0

    def replace(self, bucket: int, dead: Any) -> None:
        if self.actors[bucket] is dead:
            self.actors[bucket] = self._cls.remote(self.settings)
            self.restarts += 1

    def shutdown(self) -> None:
        import ray

        for actor in self.actors:
            ray.kill(actor)


def _rows(args: argparse.Namespace, answer_tools: Any, outside: bool = False) -> Iterator[Any]:
    """Items of SOURCE (the first --limit of them): Ray Data for data files and hub names, the
    loaders for folders and native JSONL (screenshots confined unless `outside`)."""
    items = _source(args, answer_tools, outside)
    return islice(items, args.limit) if getattr(args, "limit", None) else items


def _source(args: argparse.Namespace, answer_tools: Any, outside: bool = False) -> Iterator[Any]:
    from ..options import single_run, task_options
    from ..sources.rows import DATA_SUFFIXES, is_run_source, iter_folder, iter_rows, load_rows

    path = Path(args.source)
    if is_run_source(path):  # as `score-dataset` reads it without Ray, --task-file / --instruction included
        options = task_options(args)
        return iter(single_run(iter_folder(path, outside, options), options))
    import ray.data

    kind = DATA_SUFFIXES.get(path.suffix.lower()) if path.is_file() else None
    readers = {"parquet": ray.data.read_parquet, "json": ray.data.read_json, "csv": ray.data.read_csv}
    if kind in readers:
        ds = readers[kind](str(path))
    else:  # a hub dataset (or .arrow): opened by `datasets`, streamed by Ray Data
        ds = ray.data.from_huggingface(load_rows(args.source, split=args.split, name=args.name, streaming=False))
    return iter_rows(ds.iter_rows(), args.source, args.id_column, answer_tools, outside)


def ray_init_kwargs(target: str | None, environ: Any = None) -> dict[str, Any]:
    """`ray.init` arguments for `--ray [ADDRESS]`.

    No ADDRESS (or "local"): join $RAY_ADDRESS when it is set, else start a private cluster for this
    run ("local": never another user's cluster found on the machine) whose processes bind loopback
    (127.0.0.1), not the machine's interface address, so nothing of it is reachable from the network.
    An ADDRESS ("auto", host:port, ray://host:10001) joins that running cluster.
    """
    env = os.environ if environ is None else environ
    quiet = {"include_dashboard": False, "log_to_driver": False}
    if target in (None, "local"):
        if env.get("RAY_ADDRESS"):
            return {"address": env["RAY_ADDRESS"], "log_to_driver": False}
        return {"address": "local", "_node_ip_address": "127.0.0.1", **quiet}
    return {"address": target, "log_to_driver": False}


def init_ray(target: str | None, environ: Any = None) -> None:
    """`ray.init` for `--ray [ADDRESS]` (see `ray_init_kwargs`).

    Why more than `_node_ip_address="127.0.0.1"`: Ray replaces a loopback node address by the
    interface address unless it runs as a single-machine instance (its laptop mode, switched by
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0). That mode is set for this process (already imported Ray
    included) and the processes it starts, so the GCS, the raylet and the workers all listen on
    127.0.0.1 only; the same mode joins a cluster at a loopback address (Ray would otherwise
    rewrite 127.0.0.1 to the interface address and never reach it).
    """
    import ray

    kwargs = ray_init_kwargs(target, environ)
    host = str(kwargs["address"]).removeprefix("ray://").rsplit(":", 1)[0].strip("[]")
    if kwargs["address"] == "local" or host in ("127.0.0.1", "localhost", "::1"):
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
    ray.init(**kwargs)


def run_ray(args: argparse.Namespace, settings: Any, writer: ResultWriter, *,
            on_record: Callable[[ScoreRecord, ActorPool], None] | None = None) -> dict[str, Any]:
    """Score SOURCE on Ray into `writer`; returns the summary (with this run's counts and Ray figures)."""
    import ray
    from ray.exceptions import RayActorError

    started_here = not ray.is_initialized()
    if started_here:
        init_ray(args.ray)
    pool = ActorPool(settings, args.actors, args.actor_cpus)
    counts = {"scored": 0, "unscored": 0, "skipped": 0}
    retried = 0
    inflight: dict[Any, tuple[int, Any, Any, int]] = {}  # ref -> (bucket, actor, item, attempt)
    shard = parse_shard(args.shard) if getattr(args, "shard", None) else None

    def submit(bucket: int, item: Any, attempt: int) -> None:
        actor = pool.actors[bucket]
        inflight[actor.score.remote(*item)] = (bucket, actor, item, attempt)

    def write(record: ScoreRecord) -> None:
        writer.write(record)
        counts[record.status] += 1
        if on_record is not None:
            on_record(record, pool)

    def drain_one() -> None:
        nonlocal retried
        (ref,), _ = ray.wait(list(inflight), num_returns=1)
        bucket, actor, item, attempt = inflight.pop(ref)
        try:
            line = ray.get(ref)
        except RayActorError as exc:
            pool.replace(bucket, actor)
            if attempt + 1 < MAX_ATTEMPTS:
                retried += 1
                submit(bucket, item, attempt + 1)
            else:
                write(ScoreRecord.unscored(item[0], f"ActorDied: {exc}"[:500], source=item[1]))
            return
        write(ScoreRecord.model_validate_json(line))

    try:
        done = writer.done_ids()
        outside = bool(settings.verifier.get("allow_outside_screenshots", False))
        for item in _rows(args, settings.answer_tools, outside):
            if item[0] in done:
                counts["skipped"] += 1
                continue
            done.add(item[0])
            loaded, key = keyed(item)
            if shard is not None and stable_bucket(key, shard[1]) != shard[0]:
                continue
            while len(inflight) >= PER_ACTOR_INFLIGHT * len(pool.actors):
                drain_one()
            submit(stable_bucket(key, len(pool.actors)), loaded, 0)
        while inflight:
            drain_one()
    finally:
        pool.shutdown()
        if started_here:
            ray.shutdown()
    return {"this_run": counts, "ray": {"actors": len(pool.actors), "restarts": pool.restarts,
                                        "retried": retried}, **summarize(writer.records())}


def score_on_ray(args: argparse.Namespace, settings: Any) -> dict[str, Any]:
    """`score-dataset --ray`: the Ray run into the command's durable log, then the export to --out."""
    from ..sources.rows import log_path_for

    try:
        import ray  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"--ray needs the ray extra (pip install 'cua-verifier[ray]'): {exc}") from exc
    out = Path(args.out)
    writer = ResultWriter(log_path_for(out))
    try:
        summary = run_ray(args, settings, writer)
    finally:
        writer.close()
    (writer.export_parquet if out.suffix == ".parquet" else writer.export_jsonl)(out)
    return summary
