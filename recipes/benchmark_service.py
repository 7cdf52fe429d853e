"""Load benchmark of the reward service: N rollouts of T tasks at once, loopback judge with latency
and faults; prints requests, 429s retried, p50/p95 latency, judge rubric calls, throughput.

    python recipes/benchmark_service.py --n 200 --tasks 10 --queue-size 24 --latency 0.02 --faults 0.05

With ``--real`` it measures what the service costs instead: `--n` rollouts of M real 1440x900
screenshots (groups of `--group` rollouts per task) sent `--clients` at a time, against a loopback
judge in its own process (0.5 s per call); it prints the service's baseline, peak and after-load
RSS (all its processes), CPU seconds per verification, throughput, the machine's load, and
`bounds`: what set the pace, read from the service's /metrics (the share of their time requests
waited for bytes or a slot and judge calls for a connection, the cores per process, and the
setting to change; see docs/scaling-serve.md, "What bounds one process").
``--warmup 1`` verifies one rollout of another task first, so one-time work is left out of the CPU.

    python recipes/benchmark_service.py --real -m 20 --n 64 --clients 64
    python recipes/benchmark_service.py --real -m 50 --n 32 --clients 32 -- --max-inflight-mb 256
    python recipes/benchmark_service.py --real -m 20 --n 64 --clients 32 --replicas 2   # Ray Serve
    python recipes/benchmark_service.py --real -m 50 --n 64 --clients 32 --warmup 1 --repeat 5  # median of 5
"""
from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from serving.perf.loadtest import LoopbackJudge, run_load


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--tasks", type=int, default=10)
    p.add_argument("--queue-size", type=int, default=24)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--latency", type=float, default=0.02, help="judge latency per call (s)")
    p.add_argument("--faults", type=float, default=0.05, help="fraction of judge calls answered 503")
    p.add_argument("--real", action="store_true", help="memory/CPU run with real screenshots (see above)")
    p.add_argument("-m", type=int, default=20, help="--real: screenshots per rollout")
    p.add_argument("--group", type=int, default=8, help="--real: rollouts per task")
    p.add_argument("--clients", type=int, default=64, help="--real: requests in flight")
    p.add_argument("--after-s", type=float, default=10.0, help="--real: RSS read this long after the load")
    p.add_argument("--replicas", type=int, default=1, help="--real: serve-reward --replicas N (Ray Serve, "
                   "task affinity; 1: the single process)")
    p.add_argument("--warmup", type=int, default=0, help="--real: rollouts verified before the clocks start "
                   "(one-time work of the process left out of CPU per verification)")
    p.add_argument("--repeat", type=int, default=1, help="--real: runs, each against a fresh service; "
                   "prints each run's line, then the median and range of each figure (one run is noisy: "
                   "+/-10-20%% on a shared or virtual machine)")
    p.add_argument("service_args", nargs="*", help="extra serve-reward options (after --)")
    a = p.parse_args(argv)
    if a.real:
        from serving.perf.realload import real_run, summarize

        runs = []
        for _ in range(max(1, a.repeat)):
            runs.append(real_run(m=a.m, n=a.n, group=a.group, clients=a.clients, latency_s=a.latency,
                                 after_s=a.after_s, warmup=a.warmup, service_args=[*a.service_args, *(
                                     ["--replicas", str(a.replicas)] if a.replicas > 1 else [])]))
            print(json.dumps(runs[-1]), flush=True)
        if len(runs) > 1:
            print(json.dumps({"summary": summarize(runs)}))
        return 0
    with LoopbackJudge(latency_s=a.latency, fault_rate=a.faults) as judge, tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp, "cfg.json")
        cfg.write_text(json.dumps({"judge": {"backoff_initial_s": 0.05, "backoff_jitter_s": 0.05,
                                             "max_concurrency": 32}}))
        proc = subprocess.Popen([sys.executable, "-c", "from cua_verifier.cli import main; raise SystemExit(main())",
                                 "serve-reward", "--port", "0", "--judge-url", judge.url, "--model", "echo",
                                 "--queue-size", str(a.queue_size), "--concurrency", str(a.concurrency),
                                 "--config", str(cfg)], stdout=subprocess.PIPE, text=True)
        try:
            url = proc.stdout.readline().split(" at ", 1)[1].split()[0]  # type: ignore[union-attr]
            figures = asyncio.run(run_load(url, n=a.n, tasks=a.tasks))
        finally:
            proc.terminate()
            proc.wait(60)
    figures.update(rubric_calls=judge.rubric_calls, judge_faults=judge.faults,
                   per_minute=round(60 * a.n / figures["wall_s"], 1))
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
