"""The browser actions as verl tools (`verl.tools.base_tool.BaseTool`), for `BrowserAgentLoop`.

verl's `ToolAgentLoop` runs a tool through its lifecycle for every call: `create(create_kwargs)`,
`execute(instance_id, arguments)`, `release(instance_id)`, then truncates the text to
`multi_turn.max_tool_response_length` and puts the images in the tool turn. A tool object is
shared by every sample of a worker (verl loads its own tools once per worker too), so the episode a
call acts on is per-sample state: the agent loop hands its `ThreadedEpisode` over in the sample's
`tools_kwargs[name]["create_kwargs"]["episode"]`, verl's documented way to give a tool
per-trajectory state, and `create` keys it by instance id until `release`.

`answer` is not a tool here: in verl's loop a reply without a tool call ends the episode, so the
final answer is that reply (`BrowserAgentLoop` records it). An `answer` tool would cost one more
generation after it, since a tool cannot end verl's loop.
"""
from __future__ import annotations

from typing import Any
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from .episode_runner import TOOL_SCHEMAS, ThreadedEpisode

#: The browser actions offered to a verl policy (every `TOOL_SCHEMAS` entry but `answer`).
VERL_TOOL_SCHEMAS = [s for s in TOOL_SCHEMAS if s["function"]["name"] != "answer"]
VERL_TOOL_NAMES = tuple(s["function"]["name"] for s in VERL_TOOL_SCHEMAS)


class BrowserTool(BaseTool):
    """One browser action of the sample's episode; its screenshot is the tool turn's image."""

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema) -> None:
        super().__init__(config, tool_schema)
        self.sees_images = bool(config.get("sees_images", False))
        self._episodes: dict[str, ThreadedEpisode] = {}

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        create_kwargs = kwargs.get("create_kwargs") or {}
        episode = create_kwargs.get("episode")
        if not isinstance(episode, ThreadedEpisode):
            raise TypeError(f"{self.name}: no browser episode in tools_kwargs (run it from BrowserAgentLoop)")
        instance_id = instance_id or uuid4().hex
        self._episodes[instance_id] = episode
        return instance_id, ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any,
                      ) -> tuple[ToolResponse, float, dict]:
        episode = self._episodes[instance_id]
        images, text = await episode.act(self.name, parameters if isinstance(parameters, dict) else {})
        if images and self.sees_images:
            return ToolResponse(text=text, image=images), 0.0, {}
        return ToolResponse(text=text), 0.0, {}  # a text policy: the screenshots go to the judge only

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._episodes.pop(instance_id, None)


_TOOLS: dict[bool, list[BrowserTool]] = {}


def browser_tools(*, sees_images: bool) -> list[BrowserTool]:
    """The browser tools, built once per process for each kind of policy (as verl builds its own)."""
    if sees_images not in _TOOLS:
        _TOOLS[sees_images] = [BrowserTool({"type": "native", "sees_images": sees_images},
                                           OpenAIFunctionToolSchema.model_validate(s)) for s in VERL_TOOL_SCHEMAS]
    return _TOOLS[sees_images]


def tools_kwargs(episode: ThreadedEpisode, given: dict[str, Any] | None = None) -> dict[str, Any]:
    """The sample's `tools_kwargs` with the episode handed to every browser tool's `create`."""
    out = dict(given or {})
    for name in VERL_TOOL_NAMES:
        entry = dict(out.get(name) or {})
        entry["create_kwargs"] = {**(entry.get("create_kwargs") or {}), "episode": episode}
        out[name] = entry
    return out
