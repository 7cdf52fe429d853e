"""The scoring commands' shared options, which live in `verifier.options` (the reward service's
`serve-reward` registers them too, and serving sits below this package); re-exported for the
commands here."""
from __future__ import annotations

from verifier.options import (
    CONFIG_HELP,
    EXIT_HELP,
    EXIT_OK,
    EXIT_UNSCORED,
    EXIT_USAGE,
    OUTSIDE_HELP,
    add_scoring_args,
    add_task_args,
    check_known_keys,
    concurrency_of,
    exit_status,
    missing_instruction_note,
    settings_overrides,
    single_run,
    task_options,
)

__all__ = ["CONFIG_HELP", "EXIT_HELP", "EXIT_OK", "EXIT_UNSCORED", "EXIT_USAGE", "OUTSIDE_HELP",
           "add_scoring_args", "add_task_args", "check_known_keys", "concurrency_of", "exit_status",
           "missing_instruction_note", "settings_overrides", "single_run", "task_options"]
