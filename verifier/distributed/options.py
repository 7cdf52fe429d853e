"""The `--ray` / `--shard` options of `score-dataset` (kept here so the command stays small)."""
from __future__ import annotations

import argparse


def add_distributed_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="score on Ray: a pool of async verifier actors (no ADDRESS: a local cluster, "
                        "or $RAY_ADDRESS; 'auto' or ray://host:10001 for a running one)")
    p.add_argument("--actors", type=int, default=2, help="--ray: verifier actors (default 2)")
    p.add_argument("--actor-cpus", type=float, default=0.25,
                   help="--ray: CPUs each actor reserves (fractional: actors mostly wait on the judge)")
    p.add_argument("--shard", metavar="I/N", help="score only shard I of N (stable hash of the task id): "
                   "run N plain processes with 0/N .. N-1/N, each with its own --out")
