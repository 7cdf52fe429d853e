"""What an unscored OpenRLHF row is given: a number that carries no signal.

Why not 0: OpenRLHF takes only numbers, and a row the verifier could not score (the judge was
down, a reply was unusable) given 0 teaches the policy "this failed" about a rollout nobody
judged. Every OpenRLHF run on defaults learned that during a judge outage (issue 38 §5).

The default fill ("mean") is the mean of the *scored* rows of the same group (the same task: the
samples of one prompt that GRPO, RLOO and REINFORCE++-baseline compare with each other), or of the
whole batch when none of its group scored. A group-relative advantage of such a row is then about
zero (exactly zero for a mean-centred one; RLOO's leave-one-out baseline too), and the scored
rows keep their advantages against each other. A group with no scored row gets one value for all
its rows, so its advantages are zero whatever that value is. When nothing in the batch scored
there is no neutral number, so `fill_rows` says so (`NoneScored`) and the caller answers instead
of inventing one (the service: 503, which OpenRLHF's remote call retries).

`on_failure` is "mean" (default), "error" (raise instead) or a number (the old behaviour with "0").
"""
from __future__ import annotations

import json
from collections import deque
from collections.abc import Hashable, Sequence
from typing import Any

MEAN = "mean"


class NoneScored(Exception):
    """No row of the batch scored: there is no mean to fill with."""


def fill_policy(on_failure: str) -> float | str | None:
    """`on_failure` parsed: None for "error", "mean", or the number (ValueError otherwise)."""
    text = str(on_failure).strip().lower()
    if text == "error":
        return None
    if text == MEAN:
        return MEAN
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"on_failure {on_failure!r}: expected 'mean', 'error' or a number") from None


def fill_rows(values: Sequence[float | None], groups: Sequence[Hashable] | None) -> list[float]:
    """Each None in `values` replaced by the mean of its group's numbers, else the batch's
    (`groups[i]` is row i's group; None: the batch is one group). Raises `NoneScored` when the
    batch has no number at all."""
    if all(v is not None for v in values):
        return [float(v) for v in values if v is not None]
    scored = [v for v in values if v is not None]
    if not scored:
        raise NoneScored("no row of the batch was scored")
    batch_mean = sum(scored) / len(scored)
    keys = list(groups) if groups is not None else [None] * len(values)
    sums: dict[Hashable, list[float]] = {}
    for key, v in zip(keys, values, strict=True):
        if v is not None:
            acc = sums.setdefault(key, [0.0, 0.0])
            acc[0], acc[1] = acc[0] + v, acc[1] + 1
    means = {k: s / n for k, (s, n) in sums.items()}
    return [v if v is not None else means.get(k, batch_mean) for k, v in zip(keys, values, strict=True)]


def group_key(prompt: str, label: Any, record: Any) -> Hashable:
    """The group of one OpenRLHF row: its task's id when the row became a trajectory, else what
    its label names (task id or instruction), else its prompt (the samples of one prompt)."""
    if isinstance(record, dict) and isinstance(record.get("task"), dict) and record["task"].get("id"):
        return ("task", str(record["task"]["id"]))
    parsed = label
    if isinstance(label, str):
        try:
            parsed = json.loads(label)
        except json.JSONDecodeError:
            return ("instruction", label.strip())
    if isinstance(parsed, dict):
        for k in ("id", "task_id", "instruction"):
            if parsed.get(k):
                return ("task", str(parsed[k])) if k != "instruction" else ("instruction", str(parsed[k]))
    return ("prompt", prompt)


def row_groups(prompts: Sequence[str] | None, labels: Sequence[Any] | None,
               records: Sequence[Any]) -> list[Hashable]:
    """`group_key` of every row of an OpenRLHF request (`records`: the rows' records or errors)."""
    return [group_key(prompts[i] if prompts and i < len(prompts) else "",
                      labels[i] if labels and i < len(labels) else None, rec) for i, rec in enumerate(records)]


class RunningMeans:
    """Recent scored rewards per task, for a caller that scores one episode at a time (the
    OpenRLHF agent): it has no batch to take a mean of, so it keeps the last `window` rewards of
    each task it saw scored, and of all tasks together."""

    def __init__(self, window: int = 64) -> None:
        self.window = window
        self._by_task: dict[str, deque[float]] = {}
        self._all: deque[float] = deque(maxlen=window)

    def add(self, task: str, reward: float) -> None:
        self._by_task.setdefault(task, deque(maxlen=self.window)).append(reward)
        self._all.append(reward)

    def mean(self, task: str) -> float | None:
        """The task's recent mean, else all tasks', else None (nothing scored yet)."""
        recent = self._by_task.get(task) or self._all
        return sum(recent) / len(recent) if recent else None
