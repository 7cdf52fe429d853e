"""`score-dataset --ray` with 1 and 2 actors on rows with inline screenshots: driver memory and throughput.

    python recipes/benchmark_ray.py --rows 40 --tasks 8 --shots 32 --latency 0.5 --actors 1 2

The source is native JSONL, one rollout per line with `--shots` real 1440x900 captures inline as
data URLs (tens of MB a row; synthetic pages when ../shared/data is missing: the first line says
which), written by a child process so that the driver's memory is the driver's own. The judge is
the loopback latency judge in its own process (`--latency` s per call).

Per actor count it prints: the driver's peak RSS (this process only, sampled every 50 ms: the
actors are other processes), each actor's peak RSS, the rows each actor scored, rows per minute
over the whole run (actor start-up included) and in steady state (first to last record), judge
calls, and the machine's load (`uptime`) before and after. `ray.init` (the local cluster's
start) is timed once, on a line of its own: every `score-dataset --ray` pays it, whatever the
actor count, and it is not in the runs' figures. `--per-actor` caps the rollouts one actor
verifies at once (`max_concurrency`), so that the judge's latency, not the CPU, bounds one actor.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MB = 2**20


def write_source(path: Path, rows: int, tasks: int, shots: int) -> str:
    """`rows` rollouts of `tasks` tasks (interleaved), each with `shots` inline screenshots."""
    from verifier.perf.shots import describe, source_pngs, write_rows

    write_rows(path, rows, tasks, shots, task_prefix="bench-task-")
    return describe(source_pngs())


class RssWatch(threading.Thread):
    """Peak RSS of this process and of the pids in `others`, sampled every `period_s`."""

    def __init__(self, period_s: float = 0.05) -> None:
        import psutil

        super().__init__(daemon=True)
        self.me, self.period_s = psutil.Process(), period_s
        self.others: dict[int, object] = {}
        self.peak = 0
        self.peak_others: dict[int, int] = {}  # pid -> peak RSS
        self.done = threading.Event()

    def run(self) -> None:
        import psutil

        while not self.done.is_set():
            self.peak = max(self.peak, self.me.memory_info().rss)
            for pid, proc in list(self.others.items()):
                try:
                    rss = proc.memory_info().rss  # type: ignore[attr-defined]
                    self.peak_others[pid] = max(self.peak_others.get(pid, 0), rss)
                except psutil.Error:
                    self.others.pop(pid, None)
            self.done.wait(self.period_s)


def uptime() -> str:
    return subprocess.run(["uptime"], check=False, capture_output=True, text=True).stdout.strip()


def one_run(n: int, src: Path, cfg: Path, tmp: str, judge: object) -> dict:
    import psutil
    import ray

    from cua_verifier.cli import build_parser
    from cua_verifier.cli.score_dataset_cmd import build_settings
    from verifier.distributed.ray_backend import run_ray
    from verifier.records import ResultWriter

    out = Path(tmp, f"o{n}.jsonl")
    args = build_parser().parse_args(["score-dataset", str(src), "--out", str(out), "--ray", "--actors", str(n),
                                      "--config", str(cfg)])
    judge.reset()  # type: ignore[attr-defined]
    watch = RssWatch()
    watch.start()
    base = watch.me.memory_info().rss
    done: list[float] = []

    def on_record(rec: object, pool: object) -> None:
        done.append(time.perf_counter())
        if len(done) == 1:  # the actors' pids, once: watched from here on
            for actor in pool.actors:  # type: ignore[attr-defined]
                pid = ray.get(actor.pid.remote())
                watch.others[pid] = psutil.Process(pid)

    load_before = uptime()
    t0 = time.perf_counter()
    with ResultWriter(out) as writer:
        summary = run_ray(args, build_settings(args), writer, on_record=on_record)
    wall = time.perf_counter() - t0
    watch.done.set()
    watch.join()
    steady = (len(done) - 1) / (done[-1] - done[0]) if len(done) > 1 and done[-1] > done[0] else 0.0
    return {"actors": n, "rows": len(done), "scored": summary["this_run"]["scored"],
            "judge_calls": len(judge.requests()),  # type: ignore[attr-defined]
            "driver_rss_mb": {"before": round(base / MB), "peak": round(watch.peak / MB)},
            "actor_peak_rss_mb": [round(v / MB) for v in watch.peak_others.values()],
            "rows_per_actor": summary["ray"]["rows_per_actor"], "wall_s": round(wall, 1),
            "per_minute": round(60 * len(done) / wall, 1), "first_record_s": round(done[0] - t0, 1) if done else None,
            "steady_per_minute": round(60 * steady, 1), "uptime_before": load_before, "uptime_after": uptime()}


def main(argv: list[str] | None = None) -> int:
    import ray

    from verifier.perf.run import start_latency_judge

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", "--rollouts", type=int, default=40)
    p.add_argument("--tasks", type=int, default=8)
    p.add_argument("--shots", type=int, default=32, help="inline screenshots per row")
    p.add_argument("--latency", type=float, default=0.5)
    p.add_argument("--actors", type=int, nargs="+", default=[1, 2])
    p.add_argument("--per-actor", type=int, default=2, help="max_concurrency: rollouts one actor verifies at once")
    p.add_argument("--write-source", metavar="PATH", help=argparse.SUPPRESS)  # the child's job
    a = p.parse_args(argv)
    if a.write_source:
        print(write_source(Path(a.write_source), a.rows, a.tasks, a.shots))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "rollouts.jsonl")
        shots = subprocess.run([sys.executable, __file__, "--write-source", str(src), "--rows", str(a.rows),
                                "--tasks", str(a.tasks), "--shots", str(a.shots)],
                               capture_output=True, text=True, check=True).stdout.strip()
        print(json.dumps({"source": f"{a.rows} rows of {a.tasks} tasks, {a.shots} inline screenshots each ({shots}), "
                          f"{src.stat().st_size / a.rows / MB:.1f} MB a row", "judge_latency_s": a.latency,
                          "per_actor": a.per_actor}), flush=True)
        judge = start_latency_judge(a.latency)
        cfg = Path(tmp, "cfg.json")
        cfg.write_text(json.dumps({"max_concurrency": a.per_actor,
                                   "judge": {"base_urls": [judge.url], "model": "echo", "max_concurrency": 64,
                                             "backoff_initial_s": 0.05, "timeout_s": 600}}))
        t0 = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        print(json.dumps({"ray_init_s": round(time.perf_counter() - t0, 1), "uptime": uptime()}), flush=True)
        rows = []
        try:
            for n in a.actors:
                rows.append(one_run(n, src, cfg, tmp, judge))
                print(json.dumps(rows[-1]), flush=True)
        finally:
            ray.shutdown()
            judge.proc.terminate()  # type: ignore[attr-defined]
        if len(rows) > 1 and rows[0]["per_minute"]:
            print(json.dumps({"speedup_vs_first": [round(r["per_minute"] / rows[0]["per_minute"], 2) for r in rows],
                              "steady_speedup_vs_first": [round(r["steady_per_minute"] / max(1e-9, rows[0]["steady_per_minute"]), 2)
                                                          for r in rows]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
