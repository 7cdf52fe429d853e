"""`cua-verifier` command line.

Each subcommand lives in its own module exposing ``register(subparsers)``; `SUBCOMMANDS` below is
the only place that knows them all (add a module name there to add a command)."""
from __future__ import annotations

import argparse
import contextvars
import importlib
import sys

from . import _globals

SUBCOMMANDS = [
    "cua_verifier.cli.inspect_cmd",
    "cua_verifier.cli.score_cmd",
    "cua_verifier.cli.score_dataset_cmd",
    "cua_verifier.cli.bench_cmd",
    "cua_verifier.cli.calibrate_cmd",
    "cua_verifier.cli.rubrics_cmd",
    "cua_verifier.cli.experiment_cmd",
    "cua_verifier.cli.view_cmd",
    "cua_verifier.cli.check_judge_cmd",
    "serving.cli",
    "serving.reward_service.cli",
]


DESCRIPTION = ("Universal Verifier for computer-use agents: inspect trajectories, score them with a judge "
               "model (process and outcome rewards, diagnosis), benchmark verifiers against human labels, "
               "and serve the judge with vLLM. Run `cua-verifier COMMAND --help` for each command.")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cua-verifier", description=DESCRIPTION)
    _globals.add_main_options(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # subcommand not built yet
                continue
            raise
        module.register(sub)
    _globals.add_command_options(sub)  # -v / --quiet after the command too, for every command
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _globals.apply(args)
    # A command's context variables (the prompt overlay of --prompts) end with the command: main()
    # called twice in one process (tests, notebooks) must not score the second run with the first's.
    return int(contextvars.copy_context().run(args.func, args) or 0)


if __name__ == "__main__":
    sys.exit(main())
