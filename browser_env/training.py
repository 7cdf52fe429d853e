"""GRPO with the browser environment: a TRL trainer that can log multimodal tool results, and the
per-episode figures the recipe prints.

Why a subclass: with `log_completions=True`, TRL 1.16 writes the completions table with
`pandas.DataFrame.to_parquet`. A tool-calling completion mixes messages whose content is a string
(assistant turns) with messages whose content is a list of parts (tool results carrying a
screenshot), and pyarrow refuses a column that mixes lists and strings, so the first log step of
any multimodal tool run raises. `BrowserGRPOTrainer.log` gives every logged message list content
(`[{"type": "text", "text": ...}]`) before TRL writes the table; nothing else changes.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from trl import GRPOTrainer


def uniform_messages(conversation: Any) -> Any:
    """The same conversation with every string `content` as a one-part list (for parquet)."""
    if not isinstance(conversation, list):
        return conversation
    out = []
    for msg in conversation:
        if isinstance(msg, dict) and isinstance(msg.get("content"), str):
            msg = {**msg, "content": [{"type": "text", "text": msg["content"]}]}
        out.append(msg)
    return out


class BrowserGRPOTrainer(GRPOTrainer):
    """`GRPOTrainer` whose completions table survives multimodal tool results (see module doc)."""

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        for key in ("prompt", "completion"):
            column = self._logs.get(key)
            if column:
                normalised = [uniform_messages(c) for c in column]
                column.clear()
                column.extend(normalised)
        super().log(logs, start_time)


def episode_summary(environments: Iterable[Any]) -> dict[str, Any]:
    """Rollouts, actions and screenshots per trajectory, episode errors: from the envs of a batch."""
    rows = []
    for env in environments:
        traj = getattr(env, "recorded_trajectory", None)
        if traj is None:
            continue
        rows.append({"task": traj.task.id, "actions": len(traj.steps), "screenshots": len(traj.screenshots),
                     "status": traj.status.value, "answered": traj.final_answer is not None,
                     "episode_error": getattr(env, "episode_error", None)})
    n = max(len(rows), 1)
    return {"rollouts": len(rows),
            "actions_per_rollout": [r["actions"] for r in rows],
            "screenshots_per_trajectory": [r["screenshots"] for r in rows],
            "rollouts_without_action": sum(r["actions"] == 0 for r in rows),
            "episode_errors": sum(r["episode_error"] is not None for r in rows),
            "answered_rate": sum(r["answered"] for r in rows) / n,
            "episodes": rows}
