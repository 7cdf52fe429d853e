"""Options every `cua-verifier` command takes, wherever they are written: `--version`, and
`-v` / `--quiet` before or after the subcommand (`cua-verifier -v score ...` and
`cua-verifier score ... -v` mean the same).

Why a module: the options are added to every registered subcommand after registration, so a
command module (including ones added later) need not know about them. Each subcommand's copy has
its own destination with a suppressed default: argparse copies a subparser's namespace over the
main one, and a plain shared destination would reset `-v` given before the subcommand to 0.
"""
from __future__ import annotations

import argparse
import logging
from importlib import metadata
from typing import Any

_SUB_VERBOSE, _SUB_QUIET = "_verbose_after_command", "_quiet_after_command"


def version() -> str:
    """The installed distribution's version (the package's own when run from a source tree)."""
    try:
        return metadata.version("cua-verifier")
    except metadata.PackageNotFoundError:
        from verifier import __version__

        return __version__


def add_main_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more logging (-vv for debug); accepted after the command too")
    parser.add_argument("-q", "--quiet", action="store_true", default=False,
                        help="errors only, and no progress bars; accepted after the command too")


def add_command_options(subparsers: Any) -> None:
    """`-v` / `--quiet` on each registered subcommand, merged by `apply` after parsing. A flag a
    command already defines for itself keeps the command's meaning (that spelling is left out)."""
    for parser in {id(p): p for p in subparsers.choices.values()}.values():  # aliases share a parser
        group = parser.add_argument_group("output")
        _add_free(group, ("-v", "--verbose"), dest=_SUB_VERBOSE, action="count", default=argparse.SUPPRESS,
                  help="more logging (-vv for debug)")
        _add_free(group, ("-q", "--quiet"), dest=_SUB_QUIET, action="store_true", default=argparse.SUPPRESS,
                  help="errors only, and no progress bars")


def _add_free(group: Any, flags: tuple[str, ...], **kwargs: Any) -> None:
    """Add the option under `flags`, or under its long spelling alone when the command already uses
    the short one (argparse refuses a conflicting flag), or not at all when it uses both."""
    free = list(flags)
    while free:
        try:
            group.add_argument(*free, **kwargs)
            return
        except argparse.ArgumentError:
            free = free[1:]  # drop the short spelling first, then give up


def apply(args: argparse.Namespace) -> None:
    """Merge the two places the options may be given, set up logging, and let `--quiet` turn off
    the progress bars of the commands that have one."""
    args.verbose = int(getattr(args, "verbose", 0) or 0) + int(getattr(args, _SUB_VERBOSE, 0) or 0)
    args.quiet = bool(getattr(args, "quiet", False) or getattr(args, _SUB_QUIET, False))
    for name in (_SUB_VERBOSE, _SUB_QUIET):
        if hasattr(args, name):
            delattr(args, name)
    if args.quiet and hasattr(args, "no_progress"):
        args.no_progress = True
    level = logging.ERROR if args.quiet else [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.quiet or args.verbose:  # asked for: also when a handler is already installed (basicConfig is then a no-op)
        logging.getLogger().setLevel(level)
