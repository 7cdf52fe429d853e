"""One browser episode driven from an event loop, for the verl and OpenRLHF agent classes.

Why a thread of its own: `BrowserEnv` uses Playwright's synchronous API, which belongs to the
thread that started it, while both frameworks run agent code as coroutines. Each episode gets a
one-thread executor, so every browser call of that episode runs on the same thread and the
framework's event loop never blocks on the browser.

The policy sees `policy_max_side`-pixel thumbnails of the screenshots (`$CUA_POLICY_MAX_SIDE`,
default `DEFAULT_POLICY_MAX_SIDE`: a full 1280x800 screenshot costs a VLM about 1.3 k tokens per
step, so a 15-step episode would not fit a usual completion budget), while the recorded trajectory
keeps the full-size screenshots for the judge.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PIL import Image

from .browser import stop_driver
from .config import DEFAULT_POLICY_MAX_SIDE, EnvConfig
from .env import BrowserEnv
from .tasks import TASKS

#: The browser actions as OpenAI function tools (what a tool-calling chat template renders).
TOOL_SCHEMAS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": props, "required": required}}}
    for name, desc, props, required in (
        ("goto", "Open a URL (full, or a path such as /shop/).", {"url": {"type": "string"}}, ["url"]),
        ("click", ("Click element [n] from the observation, or the point (x, y) of the last screenshot you were "
         "shown, in that image's own pixels (it may be smaller than the browser window; 0, 0 is its top left)."),
         {"element": {"type": "integer"}, "x": {"type": "integer", "description": "pixels from the image's left edge"},
          "y": {"type": "integer", "description": "pixels from the image's top edge"}}, []),
        ("type", "Type text into element [n] (default: the focused field); submit presses Enter.",
         {"text": {"type": "string"}, "element": {"type": "integer"}, "submit": {"type": "boolean"}}, ["text"]),
        ("scroll", "Scroll most of a screen.", {"direction": {"type": "string", "enum": ["down", "up"]}}, []),
        ("go_back", "Go back to the previous page.", {}, []),
        ("answer", "Give the final answer to the user and end the episode.", {"text": {"type": "string"}},
         ["text"]),
    )]
TOOL_NAMES = tuple(t["function"]["name"] for t in TOOL_SCHEMAS)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
ENV_MAX_SIDE = "CUA_POLICY_MAX_SIDE"


def policy_max_side() -> int:
    """The thumbnail side the agent classes use: `$CUA_POLICY_MAX_SIDE` or the recipes' default."""
    return int(os.environ.get(ENV_MAX_SIDE) or DEFAULT_POLICY_MAX_SIDE)


def with_page(messages: list[dict[str, Any]], images: list[Image.Image], text: str, *,
              sees_images: bool) -> list[dict[str, Any]]:
    """The prompt's messages with the start page appended to the last (user) turn: its
    screenshots as image parts for a VLM policy (none for a text policy: the judge still gets
    them from the recording), then its text. The caller's messages are left as they were."""
    out = [dict(m) for m in messages]
    last = out[-1]
    content = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
    seen = [{"type": "image", "image": img} for img in images] if sees_images else []
    last["content"] = [*content, *seen, {"type": "text", "text": text}]
    return out


def parse_tool_call(text: str) -> tuple[str, dict[str, Any]] | None:
    """The first Hermes-style `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` in a turn."""
    match = _TOOL_CALL.search(text)
    if match is None:
        return None
    try:
        call = json.loads(match.group(1))
        args = call.get("arguments") or {}
        args = json.loads(args) if isinstance(args, str) else args
        return str(call["name"]), dict(args)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def task_id_of(row: dict[str, Any]) -> str:
    """The `browser_env.tasks` id of a dataset row: `task_id`, `extra_info.task_id`, a label
    naming it, or the task whose instruction is the prompt's text."""
    extra = row.get("extra_info") or {}
    for value in (row.get("task_id"), extra.get("task_id") if isinstance(extra, dict) else None, row.get("label")):
        if isinstance(value, str) and value.strip().startswith("{"):
            try:
                value = json.loads(value).get("id")
            except (ValueError, AttributeError):
                value = None
        if isinstance(value, str) and value in TASKS:
            return value
    text = json.dumps(row.get("raw_prompt") or row.get("prompt") or "", default=str)
    for tid, task in TASKS.items():
        if task.instruction in text or json.dumps(task.instruction)[1:-1] in text:
            return tid
    raise ValueError("the row names no browser_env task (task_id, extra_info.task_id, or its instruction)")


class ThreadedEpisode:
    """A `BrowserEnv` on a thread of its own; `await`-able reset/act, then the trajectory."""

    def __init__(self, config: EnvConfig | dict[str, Any] | None = None, *,
                 policy_max_side: int = DEFAULT_POLICY_MAX_SIDE) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="browser-episode")
        base = config.model_dump() if isinstance(config, EnvConfig) else dict(config or {})
        self._config = EnvConfig.model_validate({**base, "policy_max_side": policy_max_side})
        self.env: BrowserEnv | None = None

    async def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, lambda: fn(*args, **kwargs))

    def _split(self, result: Any) -> tuple[list[Image.Image], str]:
        parts = result if isinstance(result, list) else [{"type": "text", "text": str(result)}]
        images = [p["image"] for p in parts if p.get("type") == "image"]  # thumbnails (EnvConfig.policy_max_side)
        return images, "\n".join(p.get("text", "") for p in parts if p.get("type") == "text")

    async def reset(self, task_id: str) -> tuple[list[Image.Image], str]:
        """Open the task's start page: (thumbnails for the policy, observation text)."""
        if self.env is None:
            self.env = await self._call(BrowserEnv, self._config)
        return self._split(await self._call(self.env.reset, task_id=task_id))

    async def act(self, name: str, arguments: dict[str, Any]) -> tuple[list[Image.Image], str]:
        """One tool call; a bad tool or bad arguments are the policy's mistake, said in the text."""
        assert self.env is not None, "reset() first"
        if name not in TOOL_NAMES:
            return [], f"unknown tool {name!r}: use one of {', '.join(TOOL_NAMES)}"
        try:
            return self._split(await self._call(getattr(self.env, name), **arguments))
        except TypeError as exc:
            return [], f"bad arguments for {name}: {exc}"

    @property
    def done(self) -> bool:
        return self.env is not None and self.env.done

    async def trajectory(self) -> dict[str, Any] | None:
        """The recorded episode as native JSON (full-size screenshots), or None after an episode
        error (the reward is then unscored, as with TRL)."""
        if self.env is None:
            return None
        try:
            return json.loads(await self._call(lambda: self.env.trajectory.to_json()))  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - an episode error: recorded on the env, nothing to score
            return None

    async def close(self) -> None:
        """The browser and this episode thread's Playwright driver, then the thread."""
        env = self.env

        def shutdown() -> None:
            if env is not None:
                env.__exit__(None, None, None)
            stop_driver()

        await self._call(shutdown)
        self._pool.shutdown(wait=False)
