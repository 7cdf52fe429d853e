"""OpenRLHF's remote reward model, backed by the reward service.

OpenRLHF (`--remote_rm_url`) POSTs `{"query": [...], "prompts": [...], "labels": [...]}` (query =
prompt + response text, labels from `--label_key`) to a URL, or calls `reward_func(queries,
prompts, labels)` from a Python file, and reads `rewards` (advantages), optional `scores` (in
[0, 1], dynamic filtering) and `extra_logs`. Both forms are served:

- URL: `--remote_rm_url http://host:8012/v1/openrlhf` (loopback service without a key, since
  OpenRLHF sends no auth header);
- file: `--remote_rm_url recipes/openrlhf_reward_func.py`, which calls the service with
  `$CUA_REWARD_API_KEY` (`make_reward_func`).

A row becomes a trajectory: its label is the task (a JSON object with `instruction` and optionally
`id`/`start_url`, or the instruction as plain text) and the response is the agent's final answer;
a label `{"trajectory": {...}}` carries a rollout recorded by the agent harness instead.
OpenRLHF has no "not applicable" reward, so failures follow `on_failure`: `"error"` (default:
the batch fails with the reasons, OpenRLHF retries then stops: visible) or a number, written for
that row with `extra_logs["uv_unscored"] = 1`.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

from verifier.errors import TrajectoryError
from verifier.loaders.rollouts import build_trajectories

from .functions import too_degraded
from .remote import ENV_KEY, ENV_URL, RemoteError

KINDS = ("combined", "process", "outcome")


def _label(label: Any) -> Any:
    if isinstance(label, str):
        try:
            return json.loads(label)
        except json.JSONDecodeError:
            return label.strip()
    return label


def row_to_record(response: str, label: Any, prompt: str = "", *, row: int = 0) -> dict[str, Any]:
    """One OpenRLHF / verl row -> a native trajectory record (raises TrajectoryError naming the row)."""
    label = _label(label)
    if isinstance(label, dict) and label.get("trajectory") is not None:
        kwargs: dict[str, Any] = {"trajectory": [label["trajectory"]]}
    elif isinstance(label, dict):
        task = {k: label[k] for k in ("id", "instruction", "start_url") if label.get(k) is not None}
        if "id" not in task and label.get("task_id"):
            task["id"] = label["task_id"]
        kwargs = {"instruction": [task.get("instruction")], "task_id": [task.get("id")],
                  "start_url": [task.get("start_url")]}
    elif isinstance(label, str) and label:
        kwargs = {"instruction": [label]}
    else:
        raise TrajectoryError(f"row {row}: the label must name the task (instruction) or carry a trajectory",
                              field="labels")
    (traj,) = build_trajectories([prompt], [response], kwargs)
    if isinstance(traj, Exception):
        raise TrajectoryError(f"row {row}: {traj}", field="labels")
    return traj.model_dump(mode="json")


def records_from_request(queries: Sequence[str], prompts: Sequence[str] | None,
                         labels: Sequence[Any] | None) -> list[dict[str, Any] | Exception]:
    """Per row: the trajectory record, or the error that makes the row unscorable."""
    out: list[dict[str, Any] | Exception] = []
    for i, query in enumerate(queries):
        prompt = prompts[i] if prompts and i < len(prompts) else ""
        response = query[len(prompt):] if prompt and query.startswith(prompt) else query
        try:
            out.append(row_to_record(response, labels[i] if labels and i < len(labels) else None, prompt, row=i))
        except TrajectoryError as exc:
            out.append(exc)
    return out


def values(result: dict[str, Any], *, weight: float = 0.5) -> dict[str, float | None]:
    """process, outcome and combined for one scored result (process None for verdict-only)."""
    outcome = 1.0 if result.get("outcome_success") else 0.0
    process = result.get("process_score")
    combined = None if process is None else weight * float(process) + (1 - weight) * outcome
    return {"process": None if process is None else float(process), "outcome": outcome, "combined": combined}


def rewards_from_items(items: Sequence[dict[str, Any]], *, kind: str = "combined", on_failure: str = "error",
                       none_if_degraded: Any = ("rescoring", "side_effects"), weight: float = 0.5) -> dict:
    """ItemResults (as dicts) -> OpenRLHF's `{"rewards", "scores", "extra_logs"}` (plain lists)."""
    if kind not in KINDS:
        raise ValueError(f"reward kind {kind!r}: expected one of {', '.join(KINDS)}")
    fill = None if on_failure == "error" else float(on_failure)
    rewards, logs = [], {"uv_process": [], "uv_outcome": [], "uv_unscored": []}
    failures = []
    for i, item in enumerate(items):
        vals = None
        if item.get("status") == "scored":
            weak = too_degraded(item["result"], frozenset(none_if_degraded))
            vals = None if weak else values(item["result"], weight=weight)
            reason = f"degraded: {', '.join(weak)}" if weak else ""
        else:
            reason = f"{item.get('error_type')}: {item.get('reason')}"
        if vals is None or vals[kind] is None:
            failures.append(f"row {i}: {reason or 'no ' + kind + ' score'}")
            vals = {"process": fill, "outcome": fill, "combined": fill}
            logs["uv_unscored"].append(1.0)
        else:
            logs["uv_unscored"].append(0.0)
        rewards.append(vals[kind])
        logs["uv_process"].append(vals["process"] if vals["process"] is not None else fill)
        logs["uv_outcome"].append(vals["outcome"])
    if failures and fill is None:
        raise RemoteError("; ".join(failures)[:2000], error_type="Unscored", status=502)
    return {"rewards": rewards, "scores": rewards, "extra_logs": logs}


def post_openrlhf(body: dict[str, Any], *, url: str | None = None, api_key_env: str = ENV_KEY,
                  params: dict[str, str] | None = None, timeout_s: float = 900.0, max_retries: int = 8) -> dict:
    """POST an OpenRLHF body to the service (sync: OpenRLHF and verl call rewards from threads),
    retrying 429/503 after Retry-After and connection failures with backoff."""
    import httpx

    base = (url or os.environ.get(ENV_URL, "http://127.0.0.1:8012")).rstrip("/")
    headers = {"Authorization": f"Bearer {key}"} if (key := os.environ.get(api_key_env)) else {}
    last = ""
    for attempt in range(max_retries + 1):
        try:
            resp = httpx.post(f"{base}/v1/openrlhf", json=body, params=params, headers=headers, timeout=timeout_s)
        except httpx.TransportError as exc:
            last, wait = f"{type(exc).__name__}: {exc}", min(2.0 ** attempt, 30.0)
        else:
            if resp.status_code == 200:
                return resp.json()
            err = (resp.json().get("error") or {}) if "json" in resp.headers.get("content-type", "") else {}
            if resp.status_code not in (429, 503):
                raise RemoteError(str(err.get("message") or resp.text[:300]),
                                  error_type=str(err.get("type") or "HTTPError"), status=resp.status_code)
            last, wait = resp.text[:300], float(resp.headers.get("Retry-After") or 1)
        if attempt < max_retries:
            time.sleep(wait)
    raise RemoteError(f"gave up after {max_retries + 1} attempts: {last}", error_type="ServiceUnavailable")


def make_reward_func(url: str | None = None, *, api_key_env: str = ENV_KEY, kind: str = "combined",
                     on_failure: str = "error") -> Any:
    """`reward_func(queries, prompts, labels, **kwargs)` for OpenRLHF's `--remote_rm_url file.py`."""
    params = {"reward": kind, "on_failure": on_failure}

    def reward_func(queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any], **_: Any) -> dict:
        out = post_openrlhf({"query": list(queries), "prompts": list(prompts),
                             "labels": [lab if isinstance(lab, str) else json.dumps(lab) for lab in labels]},
                            url=url, api_key_env=api_key_env, params=params)
        try:
            import torch
        except ImportError:  # plain lists outside a trainer
            return out
        return {"rewards": torch.tensor(out["rewards"], dtype=torch.float32),
                "scores": torch.tensor(out["scores"], dtype=torch.float32), "extra_logs": {
                    k: torch.tensor(v, dtype=torch.float32) for k, v in out["extra_logs"].items()}}

    return reward_func
