"""Throughput of `score-dataset --ray` with 1, 2 and 4 actors against a loopback judge (0.5 s per call).

    python recipes/benchmark_ray.py --rollouts 32 --tasks 8 --latency 0.5 --actors 1 2 4

Prints trajectories per minute per actor count over the whole run (actor start-up included) and
in steady state (first to last result), on a local Ray cluster. `--per-actor` caps the rollouts
one actor verifies at once, so that the judge latency, not the CPU, bounds one actor.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from serving.reward_service.loadtest import LoopbackJudge, trajectory


def main(argv: list[str] | None = None) -> int:
    import ray

    from cua_verifier.cli import build_parser
    from cua_verifier.cli.score_dataset_cmd import build_settings
    from verifier.distributed.ray_backend import run_ray
    from verifier.records import ResultWriter

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rollouts", type=int, default=32)
    p.add_argument("--tasks", type=int, default=8)
    p.add_argument("--latency", type=float, default=0.5)
    p.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--per-actor", type=int, default=2, help="max_concurrency: rollouts one actor verifies at once")
    a = p.parse_args(argv)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    rows = []
    try:
        with LoopbackJudge(latency_s=a.latency) as judge, tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp, "rollouts.jsonl")
            src.write_text("\n".join(trajectory(k, f"task-{k % a.tasks}").to_json() for k in range(a.rollouts)))
            cfg = Path(tmp, "cfg.json")
            cfg.write_text(json.dumps({"max_concurrency": a.per_actor,
                                       "judge": {"base_urls": [judge.url], "model": "echo",
                                                 "max_concurrency": 64, "backoff_initial_s": 0.05}}))
            for n in a.actors:
                args = build_parser().parse_args(["score-dataset", str(src), "--out", str(Path(tmp, f"o{n}.jsonl")),
                                                  "--ray", "--actors", str(n), "--config", str(cfg)])
                done: list[float] = []
                t0 = time.perf_counter()
                with ResultWriter(Path(tmp, f"o{n}.jsonl")) as writer:
                    run_ray(args, build_settings(args), writer,
                            on_record=lambda rec, pool, d=done: d.append(time.perf_counter()))
                wall = time.perf_counter() - t0
                steady = (len(done) - 1) / (done[-1] - done[0]) if len(done) > 1 and done[-1] > done[0] else 0.0
                rows.append({"actors": n, "rollouts": len(done), "wall_s": round(wall, 1),
                             "per_minute": round(60 * len(done) / wall, 1),
                             "first_result_s": round(done[0] - t0, 1), "steady_per_minute": round(60 * steady, 1)})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
