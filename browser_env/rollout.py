"""The browser environment in a custom loop: `run_episode` and a TRL `rollout_func` around it.

`GRPOTrainer(rollout_func=...)` hands the function the prompts of this process and expects
`prompt_ids`, `completion_ids` and `logprobs` back; every other key reaches the reward functions
per row. Here the extra key is `trajectory` (native JSON dicts), which `verifier.loaders.rollouts` reads
before anything else, so the verifier judges the recorded episode, screenshots included.

The agent is any callable `agent(messages) -> {"name": tool, "arguments": {...}, "text": str}`
(or `None` to stop): an external harness, a served policy, or a scripted agent in tests. It may
also return `"token_ids"` / `"logprobs"` for its turn (what the trainer optimises); without them
the turn's text is tokenised with the trainer's processing class and its logprobs are 0.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .env import BrowserEnv
from .tasks import TASKS

Agent = Callable[[list[dict[str, Any]]], dict[str, Any] | None]
TOOLS = ("goto", "click", "type", "scroll", "go_back", "answer")


def run_episode(env: BrowserEnv, task_id: str, agent: Agent, *, max_turns: int = 32) -> dict[str, Any]:
    """Play one episode; returns the transcript (tool results with their screenshots), the agent's
    turns and the trajectory (a dict, or None after an episode error: the reward is then None)."""
    first = env.reset(task_id=task_id)
    parts = first if isinstance(first, list) else [{"type": "text", "text": first}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": TASKS[task_id].instruction}, *parts]}]
    turns: list[dict[str, Any]] = []
    for _ in range(max_turns):
        if env.done:
            break
        call = agent(messages)
        if call is None:
            break
        turns.append(call)
        name, args = call["name"], call.get("arguments") or {}
        messages.append({"role": "assistant", "content": call.get("text", ""),
                         "tool_calls": [{"type": "function", "function": {"name": name, "arguments": args}}]})
        if name not in TOOLS:
            result: Any = f"unknown tool {name!r}"
        else:
            try:
                result = getattr(env, name)(**args)
            except TypeError as exc:  # wrong arguments from the agent: its turn fails, the episode goes on
                result = f"bad arguments for {name}: {exc}"
        messages.append({"role": "tool", "name": name, "content": result if isinstance(result, list) else str(result)})
    try:
        trajectory = json.loads(env.trajectory.to_json())
    except Exception:  # noqa: BLE001 - an episode error: recorded on the env, no trajectory to score
        trajectory = None
    return {"messages": messages, "turns": turns, "trajectory": trajectory}


def make_rollout_func(agent: Agent, env_factory: Callable[[], BrowserEnv] = BrowserEnv, *,
                      max_turns: int = 32) -> Callable[[list[Any], Any], dict[str, Any]]:
    """A `rollout_func(prompts, trainer)` playing `trainer.num_generations` episodes per prompt.

    The task of a prompt is found by its instruction (the `browser_env.tasks` prompts); one
    environment is kept per rollout slot and reset per episode.
    """
    by_instruction = {t.instruction: t.id for t in TASKS.values()}
    envs: list[BrowserEnv] = []

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        tok = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
        out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "trajectory": []}
        slot = 0
        for prompt in prompts:
            text = prompt if isinstance(prompt, str) else _last_user_text(prompt)
            task_id = by_instruction.get(text.strip())
            if task_id is None:
                raise ValueError(f"no browser_env task has the instruction {text[:80]!r}")
            prompt_ids = tok(text, add_special_tokens=False)["input_ids"]
            for _ in range(trainer.num_generations):
                while len(envs) <= slot:
                    envs.append(env_factory())
                run = run_episode(envs[slot], task_id, agent, max_turns=max_turns)
                slot += 1
                ids: list[int] = []
                logps: list[float] = []
                for turn in run["turns"]:
                    turn_ids = turn.get("token_ids") or tok(json.dumps(
                        {"name": turn["name"], "arguments": turn.get("arguments") or {}}),
                        add_special_tokens=False)["input_ids"]
                    ids += list(turn_ids)
                    logps += list(turn.get("logprobs") or [0.0] * len(turn_ids))
                out["prompt_ids"].append(prompt_ids)
                out["completion_ids"].append(ids or [tok.eos_token_id])
                out["logprobs"].append(logps or [0.0])
                out["trajectory"].append(run["trajectory"])
        return out

    rollout_func.environments = envs  # type: ignore[attr-defined]  # for shutdown and inspection
    return rollout_func


def _last_user_text(prompt: list[dict[str, Any]]) -> str:
    for msg in reversed(prompt):
        if msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, str):
                return content
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""
