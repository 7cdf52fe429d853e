"""`score-dataset --ray`: verify on a pool of Ray actors that read the source themselves.

Design (issue 21 §5: the driver is out of the data path):
- The driver sends each actor the source's name and options and the ids already in the result
  log (resume); it receives ids and finished records only. Each actor reads the whole source on
  its own node and scores the rows whose task hashes to its bucket (`actors.ShardReader`), so a
  task's rubric is written once, and no row's bytes pass through the driver.
- The driver owns the only writer: it writes each record (fsync) as it arrives; a record exists
  once or not at all (a late duplicate is dropped by id).
- An actor that dies (killed, OOM, node lost) ends its stream with an error; the driver knows which
  rows it held (its "start" events), replaces it, and the replacement reads its shard again,
  skipping every row already written. Rows held by an actor that died `MAX_ATTEMPTS` times become
  unscored records, so no row is lost and none is written twice.
"""
from __future__ import annotations

import argparse
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..records import ResultWriter, ScoreRecord, summarize
from .actors import ShardReader, SourceSpec
from .shard import parse_shard
from .shipping import project_runtime_env

MAX_ATTEMPTS = 3
PER_ACTOR_INFLIGHT = 16


class ActorPool:
    """N actors by bucket; a dead one is replaced (once) by whoever notices first."""

    def __init__(self, settings: Any, n: int, cpus: float) -> None:
        import ray

        self._cls = ray.remote(ShardReader).options(num_cpus=cpus, max_concurrency=4)
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


def source_spec(args: argparse.Namespace, settings: Any) -> SourceSpec:
    """What the actors need to read SOURCE: names and options only (the driver opens nothing)."""
    from ..options import task_options

    path = Path(args.source)
    tools = settings.answer_tools
    return SourceSpec(source=args.source, path=str(path.resolve()) if path.exists() else args.source,
                      split=getattr(args, "split", "train"), name=getattr(args, "name", None),
                      streaming=bool(getattr(args, "streaming", False)), id_column=getattr(args, "id_column", None),
                      limit=getattr(args, "limit", None), task_options=task_options(args),
                      answer_tools=None if tools is None else tuple(tools),
                      outside=bool(settings.verifier.get("allow_outside_screenshots", False)),
                      shard=parse_shard(args.shard) if getattr(args, "shard", None) else None)


def ray_init_kwargs(target: str | None, environ: Any = None, *, log_to_driver: bool = True) -> dict[str, Any]:
    """`ray.init` arguments for `--ray [ADDRESS]`.

    No ADDRESS (or "local"): join $RAY_ADDRESS when it is set, else start a private cluster for this
    run ("local": never another user's cluster found on the machine) whose processes bind loopback
    (127.0.0.1), not the machine's interface address, so nothing of it is reachable from the network.
    An ADDRESS ("auto", host:port, ray://host:10001) joins that running cluster.

    `log_to_driver`: the actors' stderr (their warnings and errors, see `actors.actor_logging`, and
    the traceback of an actor that dies) is printed by the driver, prefixed with the actor's name
    and pid. It was off, so an actor that failed left its reason only in the cluster's session
    files; `--quiet` turns it off again.
    """
    env = os.environ if environ is None else environ
    if target in (None, "local"):
        if env.get("RAY_ADDRESS"):
            return {"address": env["RAY_ADDRESS"], "log_to_driver": log_to_driver}
        return {"address": "local", "_node_ip_address": "127.0.0.1", "include_dashboard": False,
                "log_to_driver": log_to_driver}
    return {"address": target, "log_to_driver": log_to_driver}


def init_ray(target: str | None, environ: Any = None, *, log_to_driver: bool = True) -> None:
    """`ray.init` for `--ray [ADDRESS]` (see `ray_init_kwargs`).

    Why more than `_node_ip_address="127.0.0.1"`: Ray replaces a loopback node address by the
    interface address unless it runs as a single-machine instance (its laptop mode, switched by
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0). That mode is set for this process (already imported Ray
    included) and the processes it starts, so the GCS, the raylet and the workers all listen on
    127.0.0.1 only; the same mode joins a cluster at a loopback address (Ray would otherwise
    rewrite 127.0.0.1 to the interface address and never reach it).
    Joining a running cluster ships the project to its workers (`shipping.project_runtime_env`).
    """
    import ray

    kwargs = ray_init_kwargs(target, environ, log_to_driver=log_to_driver)
    host = str(kwargs["address"]).removeprefix("ray://").rsplit(":", 1)[0].strip("[]")
    if kwargs["address"] == "local" or host in ("127.0.0.1", "localhost", "::1"):
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
    if kwargs["address"] == "local":  # this machine's workers import the project as the driver does
        ray.init(**kwargs)
    else:  # a running cluster's workers may be on other machines: the project's code travels along
        ray.init(**kwargs, runtime_env=project_runtime_env())


def run_ray(args: argparse.Namespace, settings: Any, writer: ResultWriter, *,
            on_record: Callable[[ScoreRecord, ActorPool], None] | None = None) -> dict[str, Any]:
    """Score SOURCE on Ray into `writer`; returns the summary (with this run's counts and Ray figures)."""
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        init_ray(args.ray, log_to_driver=not getattr(args, "quiet", False))
    pool = ActorPool(settings, args.actors, args.actor_cpus)
    try:
        run = _Run(pool, source_spec(args, settings), writer, on_record)
        run.until_done()
    finally:
        pool.shutdown()
        if started_here:
            ray.shutdown()
    return {"this_run": run.counts, "ray": {"actors": len(pool.actors), "restarts": pool.restarts,
                                            "retried": run.retried, "rows_per_actor": run.per_actor},
            **summarize(writer.records())}


class _Run:
    """The driver's loop: one event stream per actor; ids and records in, records to the writer."""

    def __init__(self, pool: ActorPool, spec: SourceSpec, writer: ResultWriter,
                 on_record: Callable[[ScoreRecord, ActorPool], None] | None) -> None:
        import ray

        self.pool, self.spec, self.writer, self.on_record = pool, spec, writer, on_record
        self.skip = ray.put(frozenset(writer.done_ids()))  # one copy in the object store, ids only
        self.finished: set[str] = set()  # written (or given up) in this run
        self.holding: list[dict[str, str]] = [{} for _ in pool.actors]  # bucket -> {id: description}
        self.deaths: Counter[str] = Counter()
        self.barren = [0] * len(pool.actors)  # deaths of a bucket in a row with no record in between
        self.per_actor = [0] * len(pool.actors)  # records each bucket's actors finished (the balance)
        self.counts = {"scored": 0, "unscored": 0, "skipped": 0}
        self.skipped: int | None = None
        self.retried = 0
        self.streams: dict[Any, tuple[int, Any]] = {}
        for bucket in range(len(pool.actors)):
            self._start(bucket)

    def _start(self, bucket: int) -> None:
        actor = self.pool.actors[bucket]
        stream = actor.run.remote(self.spec, bucket, len(self.pool.actors), self.skip,
                                  frozenset(self.finished), PER_ACTOR_INFLIGHT)
        self.streams[stream] = (bucket, actor)

    def until_done(self) -> None:
        import ray
        from ray.exceptions import RayActorError

        while self.streams:
            (stream,), _ = ray.wait(list(self.streams), num_returns=1)
            bucket, actor = self.streams[stream]
            try:
                kind, value = ray.get(next(stream))
            except StopIteration:
                del self.streams[stream]
                if self.holding[bucket]:  # ended holding rows: handled as a death (never silently lost)
                    self._died(bucket, actor, "the actor's stream ended with rows unfinished")
                continue
            except RayActorError as exc:
                del self.streams[stream]
                self._died(bucket, actor, f"ActorDied: {exc}")
                continue
            if kind == "start":
                self.holding[bucket][value[0]] = value[1]
            elif kind == "done":
                record = ScoreRecord.model_validate_json(value)
                self.holding[bucket].pop(record.id, None)
                self.barren[bucket] = 0
                self.per_actor[bucket] += record.id not in self.finished
                self._write(record)
            elif kind == "read" and self.skipped is None:  # every actor counts the same rows
                self.skipped = self.counts["skipped"] = value

    def _write(self, record: ScoreRecord) -> None:
        if record.id in self.finished:  # a row re-read by a replacement after its record came in
            return
        self.finished.add(record.id)
        self.writer.write(record)
        self.counts[record.status] += 1
        if self.on_record is not None:
            self.on_record(record, self.pool)

    def _died(self, bucket: int, actor: Any, reason: str) -> None:
        """Replace the actor; the rows it held are retried by its replacement, or recorded unscored
        after `MAX_ATTEMPTS` deaths; a bucket whose actors keep dying before any record fails the run."""
        self.pool.replace(bucket, actor)
        self.barren[bucket] += 1
        for rid, desc in self.holding[bucket].items():
            self.deaths[rid] += 1
            if self.deaths[rid] >= MAX_ATTEMPTS:
                self._write(ScoreRecord.unscored(rid, reason[:500], source=desc))
                self.barren[bucket] = 0  # a row given up is progress: its record is written
            else:
                self.retried += 1
        self.holding[bucket].clear()
        if self.barren[bucket] > MAX_ATTEMPTS:
            raise RuntimeError(f"Ray actor {bucket} died {self.barren[bucket]} times in a row without "
                               f"finishing a row: {reason}")
        self._start(bucket)


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
