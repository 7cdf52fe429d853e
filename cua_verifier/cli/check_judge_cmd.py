"""`cua-verifier check-judge`: probe a judge endpoint for what would make a real run fail.

The checks live in `verifier.judgecheck`; this module only parses flags and prints. Exit status:
0 when every check passed or is unknown, 1 when a real run would fail, 2 on a usage error.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from verifier.errors import ConfigError, TrajectoryError

from ._options import CONFIG_HELP, settings_overrides


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("check-judge", help="probe a judge endpoint: model, schemas, images, context, "
                              "prefix cache, latency", description=__doc__.split("\n")[0])
    p.add_argument("--judge-url", help="OpenAI-compatible base URL (default: CUA_JUDGE_URL)")
    p.add_argument("--model", help="judge model name as served (default: CUA_JUDGE_MODEL)")
    p.add_argument("--trajectory", metavar="PATH", help="size the image and context checks for this "
                   "trajectory (default: a synthetic 50-step run)")
    p.add_argument("--config", help=CONFIG_HELP)
    p.set_defaults(func=run, votes=None, top_k=None, concurrency=None)


def run(args: argparse.Namespace) -> int:
    from verifier.config import VerifierConfig
    from verifier.judge import JudgeConfig
    from verifier.judgecheck import run_checks

    try:
        settings = settings_overrides(args)
        cfg = VerifierConfig(**settings.get("verifier", {}))
        judge_cfg = JudgeConfig.from_env(**(settings.get("judge") or {}))
        traj = None
        if args.trajectory:
            from verifier.loaders import load_trajectories

            traj = next(iter(load_trajectories(args.trajectory)))
    except (ConfigError, TrajectoryError, ValueError, StopIteration) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    checks = run_checks(judge_cfg, cfg, traj)
    for check in checks:
        print(check.line())
    failed = [c.name for c in checks if c.status == "fail"]
    print(f"{len(checks)} checks: {len(failed)} failed" + (f" ({', '.join(failed)}): a real run would fail"
                                                           if failed else ""))
    return 1 if failed else 0
