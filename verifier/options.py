"""Judge / verifier options shared by `score`, `score-dataset` and `serve-reward`: same flags, same
--config format.

Why: the two commands used to read --config differently (VerifierConfig fields vs RewardSettings),
only one had --votes/--top-k, and a `max_concurrency` in the file silently beat --concurrency.
Now both take one JSON format and one precedence: explicit flags > --config file > environment
(CUA_VERIFIER_CONFIG, CUA_JUDGE_URL, CUA_JUDGE_MODEL) > defaults.

It sits in the core, not in the command line (`cua_verifier.cli`), because the reward service's
command (serving/reward_service/cli.py) registers the same flags and serving sits below the CLI.
"""
from __future__ import annotations

import argparse
from typing import Any

from .errors import ConfigError
from .settings import split_urls

CONFIG_HELP = (
    'JSON or YAML (.yaml/.yml) settings file. Either reward-settings shaped, {"verifier": {"votes": 3}, "judge": {"timeout_s": '
    '120}, "max_concurrency": 8}, or plain verifier fields at top level, {"votes": 3, "top_k": 5}; both '
    "may be mixed. Explicit flags win over the file (--votes, --top-k, --judge-url, --model, "
    "--concurrency over max_concurrency)."
)


OUTSIDE_HELP = ("read screenshot files outside the trajectory's folder (../, absolute paths, symlinks); "
                "by default such paths are refused, since any image they reach is sent to the judge")


TASK_FILE_HELP = ("where the instruction comes from for formats that do not store it (browser-use before 0.7.11, "
                  "OSWorld): an OSWorld task config .json or a folder of them (evaluation_examples/examples), or "
                  "a TSV/JSON/JSONL task list matched by task id")
INSTRUCTION_HELP = "the task instruction of a single run whose format does not store it (wins over --task-file)"


def add_task_args(p: argparse.ArgumentParser, *, instruction: bool = True) -> None:
    """--task-file (and, for commands that take single runs, --instruction)."""
    p.add_argument("--task-file", metavar="PATH", default=None, help=TASK_FILE_HELP)
    if instruction:
        p.add_argument("--instruction", metavar="TEXT", default=None, help=INSTRUCTION_HELP)


def task_options(args: argparse.Namespace) -> dict[str, Any]:
    """The loader options of --task-file / --instruction that were given."""
    out = {"task_file": getattr(args, "task_file", None), "instruction": getattr(args, "instruction", None)}
    return {k: v for k, v in out.items() if v is not None}


def single_run(items: Any, options: dict[str, Any]) -> Any:
    """`items` as a list when --instruction was given, refused when it holds more than one run:
    one instruction cannot be the task of several runs (a task file matches each by id)."""
    if "instruction" not in options:
        return items
    found = list(items)
    if len(found) > 1:
        raise ConfigError(f"--instruction TEXT is for a single run, but {len(found)} were found; use --task-file "
                          "PATH to give each run its own task")
    return found


def missing_instruction_note(records: Any) -> str | None:
    """One line when runs were left unscored for want of their instruction (the record's reason
    says so too, but a summary shows only error types): how to supply it."""
    from .loaders.task_file import SUPPLY_HINT

    n = sum(1 for r in records if r.status == "unscored" and r.reason and SUPPLY_HINT in r.reason)
    return f"error: {n} run(s) lack their task instruction: {SUPPLY_HINT}" if n else None


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
    add_rubric_args(p)
    if files:
        p.add_argument("--prompts", metavar="DIR", help=PROMPTS_HELP)
        p.add_argument("--no-progress", action="store_true", help="no progress bar")
        p.add_argument("--allow-outside-screenshots", action="store_true", help=OUTSIDE_HELP)
        p.epilog = EXIT_HELP


def add_rubric_args(p: argparse.ArgumentParser) -> None:
    """--rubrics FILE, --rubrics-only and the rubric judge's flags (docs/rubrics.md)."""
    p.add_argument("--rubrics", metavar="FILE", default=None,
                   help="rubric file (`cua-verifier rubrics`): score each task against its rubric there "
                        "(matched by task id; its instruction hash must agree)")
    p.add_argument("--rubrics-only", action="store_true",
                   help="refuse (unscored) a task with no rubric in --rubrics instead of generating one")
    p.add_argument("--rubric-judge-url", metavar="URL", default=None,
                   help="judge that writes rubrics no file provides (default: the scoring judge)")
    p.add_argument("--rubric-model", metavar="NAME", default=None, help="model name of the rubric judge")


def _rubric_overrides(args: argparse.Namespace, data: dict[str, Any]) -> None:
    import os

    if path := getattr(args, "rubrics", None):
        data["rubrics"] = os.path.abspath(path)  # Ray actors and a served reward read it from anywhere
    elif isinstance(data.get("rubrics"), str):
        data["rubrics"] = os.path.abspath(data["rubrics"])
    if getattr(args, "rubrics_only", False):
        data["rubrics_only"] = True
    rubric_judge = dict(data.get("rubric_judge") or {})
    if url := getattr(args, "rubric_judge_url", None):
        rubric_judge["base_urls"] = split_urls(url)
    if model := getattr(args, "rubric_model", None):
        rubric_judge["model"] = model
    if rubric_judge:
        data["rubric_judge"] = rubric_judge


PROMPTS_HELP = ("prompt overlay folder laid out like prompts/: its templates and principle blocks replace the "
                "packaged ones of the same name (results record every prompt's hash); checked before any call")


def apply_prompt_overlay(args: argparse.Namespace) -> None:
    """`--prompts DIR`: checked (`PromptOverlayError`, a ConfigError) and set for this run."""
    folder = getattr(args, "prompts", None)
    if folder:
        from .overlay import check_overlay
        from .prompts import use_prompt_overlay

        check_overlay(folder)
        use_prompt_overlay(folder)


def settings_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The --config file (normalised to reward-settings shape) with the explicit flags applied on top."""
    from .settings import normalise_config, read_config_file

    apply_prompt_overlay(args)
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
    _rubric_overrides(args, data)
    return normalise_config({**data, "verifier": verifier, "judge": judge})


def concurrency_of(overrides: dict[str, Any], args: argparse.Namespace) -> int:
    """--concurrency, else the file's max_concurrency, else the command's default."""
    value = overrides.get("max_concurrency", args.default_concurrency)
    if not isinstance(value, int) or value < 1:
        raise ConfigError(f"max_concurrency must be a positive integer, got {value!r}")
    return value


def check_known_keys(overrides: dict[str, Any]) -> None:
    """Reject keys that neither the reward settings nor the verifier config know (typos)."""
    from .settings import RewardSettings

    unknown = sorted(set(overrides) - set(RewardSettings.model_fields))
    if unknown:
        raise ConfigError(f"--config: unknown setting(s) {', '.join(unknown)} (expected verifier fields "
                          f"or {', '.join(sorted(RewardSettings.model_fields))})")
