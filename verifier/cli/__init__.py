"""`cua-verifier` command line. Each subcommand lives in its own module exposing
``register(subparsers)``; the module list below is the only place that knows them all."""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

SUBCOMMANDS = [
    "verifier.cli.inspect_cmd",
    "verifier.cli.score_cmd",
    "verifier.cli.score_dataset_cmd",
    "verifier.cli.bench_cmd",
    "verifier.cli.calibrate_cmd",
    "verifier.cli.view_cmd",
    "serving.cli",
    "serving.reward_service.cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cua-verifier", description=__doc__.split("\n")[0])
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # subcommand not built yet
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
