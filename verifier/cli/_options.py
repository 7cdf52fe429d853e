"""Judge / verifier options shared by `score` and `score-dataset`: same flags, same --config format.

Why: the two commands used to read --config differently (VerifierConfig fields vs RewardSettings),
only one had --votes/--top-k, and a `max_concurrency` in the file silently beat --concurrency.
Now both take one JSON format and one precedence: explicit flags > --config file > environment
(CUA_VERIFIER_CONFIG, CUA_JUDGE_URL, CUA_JUDGE_MODEL) > defaults.
"""
from __future__ import annotations

import argparse
from typing import Any

from ..errors import ConfigError
from ..settings import split_urls

CONFIG_HELP = (
    'JSON settings file. Either reward-settings shaped, {"verifier": {"votes": 3}, "judge": {"timeout_s": '
    '120}, "max_concurrency": 8}, or plain verifier fields at top level, {"votes": 3, "top_k": 5}; both '
    "may be mixed. Explicit flags win over the file (--votes, --top-k, --judge-url, --model, "
    "--concurrency over max_concurrency)."
)


OUTSIDE_HELP = ("read screenshot files outside the trajectory's folder (../, absolute paths, symlinks); "
                "by default such paths are refused, since any image they reach is sent to the judge")


#: One exit-status policy for `score` and `score-dataset` (also in README.md and each --help).
EXIT_OK, EXIT_USAGE, EXIT_UNSCORED = 0, 2, 3
EXIT_HELP = ("exit status: 0 every rollout scored; 3 some rollouts unscored (reasons in the summary; "
             "rerunning the same command retries them); 2 bad usage, configuration or input, a missing "
             "optional dependency, an unreachable judge or a results file in use (nothing scored).")


def exit_status(counts: dict[str, int]) -> int:
    """EXIT_UNSCORED when this run left any rollout unscored, else EXIT_OK."""
    return EXIT_UNSCORED if counts.get("unscored") else EXIT_OK


def add_scoring_args(p: argparse.ArgumentParser, *, default_concurrency: int, files: bool = True) -> None:
    """The flags the scoring commands share. `files=False` (serve-reward) leaves out what only a
    run over files has: the progress bar, screenshots outside the data folder, the exit statuses."""
    p.add_argument("--judge-url", help="OpenAI-compatible base URL(s), comma-separated (default: CUA_JUDGE_URL)")
    p.add_argument("--model", help="judge model name as served (default: CUA_JUDGE_MODEL)")
    p.add_argument("--config", help=CONFIG_HELP)
    p.add_argument("--votes", type=int, help="V: rescoring runs and outcome votes (odd); wins over --config")
    p.add_argument("--top-k", type=int, help="screenshots analysed per criterion; wins over --config")
    p.add_argument("--concurrency", type=int,
                   help=f"trajectories verified at once (default: max_concurrency from --config, else "
                        f"{default_concurrency})")
    p.set_defaults(default_concurrency=default_concurrency)
    if files:
        p.add_argument("--no-progress", action="store_true", help="no progress bar")
        p.add_argument("--allow-outside-screenshots", action="store_true", help=OUTSIDE_HELP)
        p.epilog = EXIT_HELP


def settings_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The --config file (normalised to reward-settings shape) with the explicit flags applied on top."""
    from reward.settings import normalise_config, read_config_file

    data = read_config_file(args.config) if args.config else {}
    verifier = dict(data.pop("verifier", None) or {})
    judge = dict(data.pop("judge", None) or {})
    if args.votes is not None:
        verifier["votes"] = args.votes
    if args.top_k is not None:
        verifier["top_k"] = args.top_k
    if args.judge_url:
        judge["base_urls"] = split_urls(args.judge_url)
    if args.model:
        judge["model"] = args.model
    if getattr(args, "allow_outside_screenshots", False):
        verifier["allow_outside_screenshots"] = True
    if args.concurrency is not None:
        if args.concurrency < 1:
            raise ConfigError("--concurrency must be at least 1")
        data["max_concurrency"] = args.concurrency
    return normalise_config({**data, "verifier": verifier, "judge": judge})


def concurrency_of(overrides: dict[str, Any], args: argparse.Namespace) -> int:
    """--concurrency, else the file's max_concurrency, else the command's default."""
    value = overrides.get("max_concurrency", args.default_concurrency)
    if not isinstance(value, int) or value < 1:
        raise ConfigError(f"max_concurrency must be a positive integer, got {value!r}")
    return value


def check_known_keys(overrides: dict[str, Any]) -> None:
    """Reject keys that neither the reward settings nor the verifier config know (typos)."""
    from reward.settings import RewardSettings

    unknown = sorted(set(overrides) - set(RewardSettings.model_fields))
    if unknown:
        raise ConfigError(f"--config: unknown setting(s) {', '.join(unknown)} (expected verifier fields "
                          f"or {', '.join(sorted(RewardSettings.model_fields))})")
