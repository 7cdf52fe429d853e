"""Memory and CPU of the reward service under a real-screenshot load, for the scale-out benchmark.

Why a separate harness from `loadtest`: the question here is what the *service* costs (resident
memory of all its processes, CPU seconds per verification), so the load must be cheap for the
client (request bodies are serialised once, before the clock starts) and the service must run in
its own process, watched from outside through /proc (psutil).

`ProcessWatch` samples the RSS of a process and its children every `period_s`; `post_all` sends
prepared JSON bodies with at most `clients` in flight, retrying 429/503 after Retry-After.
"""
from __future__ import annotations

import asyncio
import json
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psutil

from serving.reward_service.serve_board import PERIOD_S

from . import bounds


def _read_tree(proc: psutil.Process, read: Callable[[psutil.Process], Any]) -> Iterator[tuple[psutil.Process, Any]]:
    """(process, read(process)) for `proc` and each live descendant; one that vanished meanwhile
    (or whose /proc entry cannot be read) is left out."""
    for p in [proc, *proc.children(recursive=True)]:
        try:
            value = read(p)
        except psutil.Error:
            continue
        yield p, value


def tree_rss(proc: psutil.Process) -> int:
    """Resident bytes of `proc` and all its descendants (0 for those that vanished meanwhile)."""
    return sum(rss for _, rss in _read_tree(proc, lambda p: p.memory_info().rss))


def tree_cpu(proc: psutil.Process) -> float:
    """User + system CPU seconds of `proc` and its live descendants."""
    return sum(sec for _, sec in _read_tree(proc, lambda p: sum(p.cpu_times()[:2])))


def _role(p: psutil.Process) -> str:
    """A short name for one process of the service: Ray's workers carry their role in their title
    (`ray::ProxyActor`, `ray::ServeReplica:app:Deployment`), Ray's daemons in their executable."""
    cmd = p.cmdline()
    head = cmd[0] if cmd else p.name()
    if head.startswith("ray::"):  # the title may carry the method running: ray::ServeController.listen...
        return head.split()[0][5:].split(":")[0].split(".")[0]
    if "serve-reward" in cmd:
        return "serve-reward"
    return head.rsplit("/", 1)[-1]


def cpu_by_role(proc: psutil.Process) -> dict[str, float]:
    """CPU seconds (user + system) of `proc` and its live descendants, summed by role (`_role`):
    which of the service's processes (proxy, replicas, Ray's daemons) spends the CPU."""
    totals: dict[str, float] = {}
    for _, (role, sec) in _read_tree(proc, lambda p: (_role(p), sum(p.cpu_times()[:2]))):
        totals[role] = totals.get(role, 0.0) + sec
    return totals


def memory_by_role(proc: psutil.Process) -> dict[str, dict[str, int]]:
    """RSS and PSS (MB) of `proc` and its live descendants, summed by role (`_role`), with a
    "total". Why PSS: processes that map the same pages (Ray's object store in /dev/shm, forked
    workers' shared libraries) each count them whole in their RSS, so a sum of RSS over a Ray
    deployment counts those pages once per process; PSS splits each shared page among its mappers."""
    mb = 2**20
    out: dict[str, dict[str, int]] = {}
    for _, (role, info) in _read_tree(proc, lambda p: (_role(p), p.memory_full_info())):
        slot = out.setdefault(role, {"rss": 0, "pss": 0})
        slot["rss"] += info.rss
        slot["pss"] += getattr(info, "pss", info.rss)
    out["total"] = {k: sum(v[k] for v in out.values()) for k in ("rss", "pss")}
    return {role: {k: round(v / mb) for k, v in fig.items()} for role, fig in sorted(out.items())}


@dataclass
class ProcessWatch:
    """Peak RSS of a process tree, sampled in a thread while a load runs."""

    pid: int
    period_s: float = 0.1
    peak: int = 0
    samples: list[tuple[float, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.proc = psutil.Process(self.pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = tree_rss(self.proc)
            self.peak = max(self.peak, rss)
            self.samples.append((time.monotonic(), rss))
            self._stop.wait(self.period_s)

    def __enter__(self) -> ProcessWatch:  # noqa: PYI034
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def rss(self) -> int:
        return tree_rss(self.proc)

    def cpu(self) -> float:
        return tree_cpu(self.proc)

    def cpu_roles(self) -> dict[str, float]:
        return cpu_by_role(self.proc)

    def memory_roles(self) -> dict[str, dict[str, int]]:
        return memory_by_role(self.proc)


async def post_all(url: str, bodies: list[bytes], *, clients: int, timeout_s: float = 1800,
                   tasks: list[str] | None = None) -> dict[str, Any]:
    """POST every body to `url` (at most `clients` at once); 429/503 retried after Retry-After.
    `tasks`: each body's task id, sent as X-CUA-Task as the TRL client does (replica routing)."""
    import httpx

    sem = asyncio.Semaphore(clients)
    counts = {"scored": 0, "failed": 0, "retried_429": 0, "retried_503": 0}
    errors: set[str] = set()
    latencies: list[float] = []
    by_replica: dict[str, int] = {}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def one(client: httpx.AsyncClient, body: bytes, task: str) -> None:
        headers = {"Content-Type": "application/json", **({"X-CUA-Task": task} if task else {})}
        async with sem:
            t0 = time.perf_counter()
            while True:
                resp = await client.post(url, content=body, headers=headers)
                if resp.status_code in (429, 503):
                    counts[f"retried_{resp.status_code}"] += 1
                    await asyncio.sleep(float(resp.headers.get("retry-after", "1")))
                    continue
                break
            latencies.append(time.perf_counter() - t0)
            replica = resp.headers.get("x-cua-replica")
            if replica is not None:  # Ray Serve: how the router spread the load
                by_replica[replica] = by_replica.get(replica, 0) + 1
            if resp.status_code == 200:
                counts["scored"] += 1
            else:
                counts["failed"] += 1
                errors.add(f"{resp.status_code}: {resp.text[:160]}")

    t0 = time.perf_counter()
    async with httpx.AsyncClient(timeout=timeout_s, limits=limits) as client:
        await asyncio.gather(*(one(client, b, t) for b, t in zip(bodies, tasks or [""] * len(bodies),
                                                                  strict=True)))
    wall = time.perf_counter() - t0
    latencies.sort()
    return {**counts, "wall_s": wall, "p50_s": latencies[len(latencies) // 2] if latencies else None,
            "errors": sorted(errors), **({"rollouts_by_replica": sorted(by_replica.values())} if by_replica else {})}


def verify_body(trajectory: Any) -> bytes:
    """The `/v1/verify` body of a Trajectory, as the TRL client would send it."""
    return json.dumps({"trajectory": trajectory.model_dump(mode="json")}).encode()


def start_service(judge_url: str, extra: list[str], *, env: dict[str, str] | None = None) -> tuple[Any, str]:
    """`serve-reward` in its own process against `judge_url`; returns (Popen, service URL)."""
    import os
    import subprocess
    import sys
    import tempfile

    cfg = os.path.join(tempfile.mkdtemp(prefix="cua-bench-"), "cfg.json")
    with open(cfg, "w") as fh:
        json.dump({"judge": {"backoff_initial_s": 0.05, "backoff_jitter_s": 0.05, "timeout_s": 600}}, fh)
    proc = subprocess.Popen([sys.executable, "-c", "from cua_verifier.cli import main; raise SystemExit(main())",
                             "serve-reward", "--port", "0", "--judge-url", judge_url, "--model", "judge",
                             "--config", cfg, *extra], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    line = proc.stdout.readline() if proc.stdout else ""
    if " at " not in line:
        proc.kill()
        raise RuntimeError(f"serve-reward did not start: {line!r}")
    return proc, line.split(" at ", 1)[1].split()[0]


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median, min and max over `real_run` results of the figures that move from run to run (CPU
    per verification, throughput, peak and after-load RSS). Why: one run on a shared or virtual
    machine moves by 10-20%, more than many a change it is meant to judge."""
    def stats(values: list[float]) -> dict[str, float]:
        return {"median": round(statistics.median(values), 3), "min": min(values), "max": max(values)}

    after = next((k for k in runs[0]["rss_mb"] if k.startswith("after_")), None)
    out: dict[str, Any] = {"runs": len(runs),
                           "cpu_s_per_verification": stats([r["cpu_s_per_verification"] for r in runs]),
                           "per_minute": stats([r["per_minute"] for r in runs]),
                           "rss_peak_mb": stats([r["rss_mb"]["peak"] for r in runs])}
    if after is not None:
        out[f"rss_{after}_mb"] = stats([r["rss_mb"][after] for r in runs])
    return out


def _metrics(url: str) -> dict[str, float]:
    """The service's figures for `bounds.verdict`, from its /metrics; an error answer raises
    rather than read as zeros (a verdict of nothing waited)."""
    import httpx

    resp = httpx.get(url + "/metrics", timeout=30)
    resp.raise_for_status()
    return bounds.read(resp.text)


def real_run(*, m: int, n: int, group: int, clients: int, latency_s: float, after_s: float,
             service_args: list[str], warmup: int = 0) -> dict[str, Any]:
    """One real-screenshot load against a fresh service; the figures (see the recipe). `warmup`
    rollouts of their own task (their own screenshots) are verified before the clocks start: what
    a process does once (TLS context, templates, per-call output classes) is not per-verification
    work, and a training run's service pays it once in thousands of verifications."""
    from verifier.perf.run import start_latency_judge
    from verifier.perf.shots import describe, source_pngs, trajectory

    sources = source_pngs()
    bodies, tasks = [], []
    for k in range(n):
        traj = trajectory(m, sources, run=f"r{k}")
        traj.task.id = f"bench-task-{k // group}"
        bodies.append(verify_body(traj))
        tasks.append(traj.task.id)
    warm = []
    for k in range(warmup):
        traj = trajectory(m, sources, run=f"warmup{k}")
        traj.task.id = "bench-warmup"
        warm.append(verify_body(traj))
    judge = start_latency_judge(latency_s)
    try:
        proc, url = start_service(judge.url, service_args)
        try:
            watch = ProcessWatch(proc.pid)
            time.sleep(1.0)
            base_rss, base_roles = watch.rss(), watch.memory_roles()
            if warm:
                warmed = asyncio.run(post_all(url + "/v1/verify", warm, clients=1))
                if warmed["scored"] != warmup:
                    raise RuntimeError(f"warm-up rollouts not scored: {warmed['errors']}")
            # replicas: every peer's counters in /metrics (a snapshot each period, a view as old)
            time.sleep(2 * PERIOD_S + 0.2)
            metrics0 = _metrics(url)
            cpu0, roles0 = watch.cpu(), watch.cpu_roles()
            load_before = bounds.machine_load()
            harness = bounds.CpuShares(judge=psutil.Process(judge.proc.pid), client=psutil.Process())
            with watch:
                figures = asyncio.run(post_all(url + "/v1/verify", bodies, clients=clients, tasks=tasks))
                cpu, roles = watch.cpu() - cpu0, watch.cpu_roles()
                shares = harness.cores(service_cpu=cpu)
                end_rss, end_roles = watch.rss(), watch.memory_roles()
                time.sleep(after_s)
                after_rss, after_roles = watch.rss(), watch.memory_roles()
                metrics1 = _metrics(url)
        finally:
            proc.terminate()
            proc.wait(180)  # a Ray Serve deployment drains, then its local Ray stops
    finally:
        judge.stop()
    mb = 2**20
    replicas = len(figures.get("rollouts_by_replica") or [1])
    verifying = "ServeReplica" if "ServeReplica" in roles else "serve-reward"  # the processes that verify
    service_cores = roles.get(verifying, 0.0) - roles0.get(verifying, 0.0)
    return {"shots": describe(sources), "m": m, "requests": n, "clients": clients,
            "body_mb_each": round(sum(map(len, bodies)) / n / mb, 1), **figures,
            "per_minute": round(60 * figures["scored"] / figures["wall_s"], 1),
            "cpu_s_per_verification": round(cpu / max(1, figures["scored"]), 3),
            "cpu_s_per_verification_by_process": {
                role: round((sec - roles0.get(role, 0.0)) / max(1, figures["scored"]), 3)
                for role, sec in sorted(roles.items()) if sec - roles0.get(role, 0.0) >= 0.0005},
            "rss_mb": {"baseline": round(base_rss / mb), "peak": round(watch.peak / mb),
                       "end_of_load": round(end_rss / mb), f"after_{after_s:g}s": round(after_rss / mb)},
            "memory_mb_by_process": {"baseline": base_roles, "end_of_load": end_roles,
                                     f"after_{after_s:g}s": after_roles},
            "machine": {"before": load_before, "after": bounds.machine_load(), "cores_busy": shares},
            "bounds": bounds.verdict(metrics0, metrics1, scored=figures["scored"], wall_s=figures["wall_s"],
                                     processes=replicas, cores=service_cores / figures["wall_s"] / replicas),
            "warmup": warmup,
            "service_args": service_args}
