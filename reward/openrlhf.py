"""OpenRLHF's remote reward model, backed by the reward service.

OpenRLHF (0.10.2 and later: `--reward.remote_url`, labels from `--data.label_key`) POSTs
`{"query": [...], "prompts": [...], "labels": [...]}` to a URL, or calls `reward_func(queries,
prompts, labels)` from a Python file, and reads `rewards` (advantages), optional `scores` (in
[0, 1], dynamic filtering) and `extra_logs`. Both forms are served:

- URL: `--reward.remote_url http://host:8012/v1/openrlhf` (loopback service without a key, since
  OpenRLHF sends no auth header);
- file: `--reward.remote_url recipes/openrlhf_reward_func.py`, which calls the service with
  `$CUA_REWARD_API_KEY` (`make_reward_func`).

A row becomes a trajectory: its label is the task (a JSON object with `instruction` and optionally
`id`/`start_url`, or the instruction as plain text) and the response is the agent's final answer;
a label `{"trajectory": {...}}` carries a rollout recorded by the agent harness instead (the
browser agent, `browser_env.openrlhf_agent`, does this). A text-only row is verified on its claims
alone (action-only mode): `extra_logs["uv_grounded"]` is 0 for it, 1 when screenshots were judged.

Why `on_failure` fills a number here: OpenRLHF swallows a reward function's exception (it logs it
at INFO and leaves the reward None) and the run then dies later in `torch.cat` with an unrelated
error. So an unscored row gets a number that carries no signal, the mean of its group's scored rows
(`reward.unscored_fill`: its group-relative advantage is about zero), flagged by
`extra_logs["uv_unscored"] = 1`, which OpenRLHF logs per step. When no row of the batch scored there
is no such number: `/v1/openrlhf` answers 503 when the judge was unreachable (OpenRLHF's remote call
retries it), 422 when every row was bad input, else 502. `on_failure="0"` (any number) gives that number instead, `"error"` raises.

OpenRLHF decodes the query with `skip_special_tokens=False`, so chat markers (`<|im_end|>`...) are
in it: they are stripped from the answer. When the prompt is not a prefix of the query, the answer
is the text after the last assistant marker; with no marker the row is unscored, never graded on
the whole transcript as if it were the answer.
"""
from __future__ import annotations

import json
import re
from collections.abc import Hashable, Sequence
from typing import Any

from verifier.errors import TrajectoryError
from verifier.loaders.rollouts import build_trajectories

from .client import ENV_KEY, ClientSettings, RemoteError, apost, async_client, post
from .functions import too_degraded, ungrounded_error
from .unscored_fill import MEAN, NoneScored, fill_policy, fill_rows

KINDS = ("combined", "process", "outcome")
#: What an unscored OpenRLHF row is given unless told otherwise: its group's mean (reward.unscored_fill).
DEFAULT_ON_FAILURE = MEAN
#: Chat-template special tokens left in a decoded query (`<|im_end|>`, `<|eot_id|>`, `</s>`...).
SPECIAL_TOKEN = re.compile(r"<\|[A-Za-z0-9_:.\- ]{1,48}\|>|</s>|<s>|<eos>|<bos>|<end_of_turn>|<start_of_turn>")
#: Where an assistant turn starts, in the chat templates seen in practice (ChatML, Llama 3, Gemma, Mistral).
ASSISTANT_TURN = re.compile(r"<\|im_start\|>assistant\s*|<\|start_header_id\|>assistant<\|end_header_id\|>\s*"
                            r"|<start_of_turn>model\s*|\[/INST\]\s*")


def _label(label: Any) -> Any:
    if isinstance(label, str):
        try:
            return json.loads(label)
        except json.JSONDecodeError:
            return label.strip()
    return label


def clean_answer(text: str) -> str:
    """The text with chat special tokens removed (they are markup, not what the agent said)."""
    return SPECIAL_TOKEN.sub("", text).strip()


def response_of(query: str, prompt: str, *, row: int = 0) -> str:
    """The policy's response in an OpenRLHF query (prompt + response, special tokens included):
    after the prompt when it is a prefix, else after the last assistant marker, else an error."""
    if prompt and query.startswith(prompt):
        return clean_answer(query[len(prompt):])
    turns = list(ASSISTANT_TURN.finditer(query))
    if turns:
        return clean_answer(query[turns[-1].end():])
    if not prompt:
        return clean_answer(query)  # a bare response (no prompt given, no chat markup)
    raise TrajectoryError(f"row {row}: the prompt is not a prefix of the query and no assistant turn marks "
                          "the response, so the final answer cannot be told from the transcript", field="query")


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
        label = labels[i] if labels and i < len(labels) else None
        try:
            recorded = isinstance(parsed := _label(label), dict) and parsed.get("trajectory") is not None
            response = "" if recorded else response_of(query, prompt, row=i)
            out.append(row_to_record(response, label, clean_answer(prompt), row=i))
        except TrajectoryError as exc:
            out.append(exc)
    return out


def rubrics_from_labels(labels: Sequence[Any] | None, n: int) -> list[Any] | None:
    """Per row, the rubric its label carries (``{"instruction": ..., "rubric": ...}``: a rubric file's
    line or a bare rubric, docs/rubrics.md), or None; None when no row carries one."""
    got = [(_label(labels[i]) if labels and i < len(labels) else None) for i in range(n)]
    rubrics = [x.get("rubric") if isinstance(x, dict) else None for x in got]
    return rubrics if any(r is not None for r in rubrics) else None


def ungrounded(record: dict[str, Any] | Exception) -> dict[str, Any] | Exception:
    """The record, or the refusal when it has no screenshots (`require_screenshots`)."""
    return ungrounded_error() if isinstance(record, dict) and not record.get("screenshots") else record


def values(result: dict[str, Any], *, weight: float = 0.5) -> dict[str, float | None]:
    """process, outcome and combined for one scored result (process None for verdict-only)."""
    outcome = 1.0 if result.get("outcome_success") else 0.0
    process = result.get("process_score")
    combined = None if process is None else weight * float(process) + (1 - weight) * outcome
    return {"process": None if process is None else float(process), "outcome": outcome, "combined": combined}


def rewards_from_items(items: Sequence[dict[str, Any]], *, kind: str = "combined",
                       on_failure: str = DEFAULT_ON_FAILURE, none_if_degraded: Any = ("rescoring", "side_effects"),
                       weight: float = 0.5, groups: Sequence[Hashable] | None = None) -> dict:
    """ItemResults (as dicts) -> OpenRLHF's `{"rewards", "scores", "extra_logs"}` (plain lists).

    An unscored row is filled by `on_failure` (reward.unscored_fill): "mean" (default) of the
    scored rows of its group (`groups[i]`, see `unscored_fill.group_key`; None: one group), else
    of the batch; a number; or "error", which raises `RemoteError` instead. Raised too when "mean"
    has nothing to take the mean of: status 422 when every unscored row was bad input (retrying
    cannot help), else 503 when a row's judge was unreachable (an outage: clients retry it), else
    502, with the rows' reasons."""
    if kind not in KINDS:
        raise ValueError(f"reward kind {kind!r}: expected one of {', '.join(KINDS)}")
    policy = fill_policy(on_failure)
    rows: list[dict[str, float | None] | None] = []
    failures, statuses = [], []
    for i, item in enumerate(items):
        vals = None
        if item.get("status") == "scored":
            weak = too_degraded(item["result"], frozenset(none_if_degraded))
            vals = None if weak else values(item["result"], weight=weight)
            reason = f"degraded: {', '.join(weak)}" if weak else ""
        else:
            reason = f"{item.get('error_type')}: {item.get('reason')}"
            statuses.append(item.get("http_status"))
        if vals is None or vals[kind] is None:
            failures.append(f"row {i}: {reason or 'no ' + kind + ' score'}")
            vals = None
        rows.append(vals)
    columns = {k: [r[k] if r is not None else None for r in rows] for k in KINDS}
    try:
        if policy is None and failures:
            raise NoneScored
        rewards = _filled(columns[kind], policy, groups)
    except NoneScored:
        raise _unscored_error(failures, statuses, items) from None
    logs: dict[str, list[float]] = {
        "uv_process": _filled(columns["process"], policy, groups, fallback=rewards),
        "uv_outcome": _filled(columns["outcome"], policy, groups, fallback=rewards),
        "uv_unscored": [0.0 if r is not None and r[kind] is not None else 1.0 for r in rows],
        "uv_grounded": [grounded(item) for item in items]}
    return {"rewards": rewards, "scores": rewards, "extra_logs": logs}


def _filled(column: list[float | None], policy: float | str | None, groups: Sequence[Hashable] | None,
            fallback: list[float] | None = None) -> list[float]:
    """`column` with its gaps filled by the policy (a log column with nothing to take a mean of
    takes the row's reward: it is only logged)."""
    if isinstance(policy, float):
        return [policy if v is None else v for v in column]
    try:
        return fill_rows(column, groups)
    except NoneScored:
        if fallback is None:
            raise
        return [f if v is None else v for v, f in zip(column, fallback, strict=True)]


def _unscored_error(failures: list[str], statuses: list[Any], items: Sequence[dict[str, Any]]) -> RemoteError:
    if statuses and all(s == 422 for s in statuses) and len(statuses) == len(failures):
        status, kind = 422, "invalid_request"
    elif any(s == 503 for s in statuses):
        status, kind = 503, "Unscored"
    else:
        status, kind = 502, "Unscored"
    waits = [float(i["retry_after"]) for i in items if i.get("retry_after")]
    return RemoteError("; ".join(failures)[:2000], error_type=kind, status=status,
                       retry_after=max(waits) if waits else (5.0 if status == 503 else None))


def grounded(item: dict[str, Any]) -> float:
    """1.0 when the verifier judged screenshots for this row, 0.0 when it had only the agent's
    words (action-only mode) or did not score it."""
    result = item.get("result") if item.get("status") == "scored" else None
    return 1.0 if isinstance(result, dict) and result.get("grounded") else 0.0


def post_openrlhf(body: dict[str, Any], *, url: str | None = None, api_key_env: str = ENV_KEY,
                  params: dict[str, str] | None = None, timeout_s: float = 900.0, max_retries: int = 8,
                  deadline_s: float | None = None) -> dict:
    """POST an OpenRLHF body to the service's `/v1/openrlhf` (blocking: OpenRLHF and verl call
    rewards from threads), with the shared client's retries inside `deadline_s`."""
    settings = ClientSettings(**({"url": url} if url else {}), api_key_env=api_key_env, timeout_s=timeout_s,
                              max_retries=max_retries, deadline_s=deadline_s or timeout_s)
    return post(settings, "/v1/openrlhf", body, params=params)


async def apost_openrlhf(body: dict[str, Any], *, url: str | None = None,
                         params: dict[str, str] | None = None) -> dict:
    """`post_openrlhf` for callers on an event loop (an agent's `step`, verl's reward loop)."""
    settings = ClientSettings(**({"url": url} if url else {}))
    client = async_client(settings, max_connections=4)
    try:
        return await apost(settings, client, "/v1/openrlhf", body, params=params)
    finally:
        await client.aclose()


def trajectory_body(trajectory: dict[str, Any]) -> dict[str, Any]:
    """An OpenRLHF body whose one row carries a recorded rollout (the label route)."""
    return {"query": [""], "prompts": [""], "labels": [json.dumps({"trajectory": trajectory})]}


def make_reward_func(url: str | None = None, *, api_key_env: str = ENV_KEY, kind: str = "combined",
                     on_failure: str = DEFAULT_ON_FAILURE, require_screenshots: bool = False) -> Any:
    """`reward_func(queries, prompts, labels, **kwargs)` for OpenRLHF's `--reward.remote_url file.py`.

    `require_screenshots=True` makes a row without screenshots unscored instead of verified on
    the agent's claims alone."""
    params = {"reward": kind, "on_failure": str(on_failure)}
    if require_screenshots:
        params["require_screenshots"] = "true"

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
