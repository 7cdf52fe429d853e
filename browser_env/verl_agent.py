"""verl agent loop `cua_browser_agent`: a browser_env episode per sample, judged on its recording.

verl's multi-turn machinery is reused as it is: this loop is its `ToolAgentLoop` (chat template
with tools, Hermes tool-call parsing, response masks, images in tool turns) with the browser as
the tool executor. Per sample (verl builds one agent-loop object per sample):

1. the row's task (`extra_info.task_id`, or its instruction) starts a Chromium episode; the start
   page's text (and, for a VLM policy, its thumbnail) joins the user turn. That thumbnail reaches
   the rollout server as it is, like a tool turn's image, so a VLM run needs no `qwen_vl_utils`
   (and torchvision) unless the rows bring images of their own;
2. each tool call the policy makes is a browser action; its screenshot comes back as the tool
   turn's image (thumbnail, `policy_max_side`), its page text as the tool turn's text;
3. the episode ends on `answer`, the step budget, or the response budget; the recorded native
   trajectory (full-size screenshots) goes in `extra_fields["trajectory"]`. verl hands an agent
   loop's extra fields to the reward manager as `tool_extra_fields`, which merges them into
   `extra_info`, so `reward.verl.compute_score` receives `extra_info["trajectory"]` and the
   verifier judges the screenshots.

Use: `actor_rollout_ref.rollout.agent.agent_loop_config_path=recipes/configs/verl_agent_loop.yaml`
and a dataset whose `agent_name` column is `cua_browser_agent` (see recipes/verl_browser.sh).
Importing this module registers the loop; it needs verl (>= 0.9) installed.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from verl.experimental.agent_loop.agent_loop import register
from verl.experimental.agent_loop.tool_agent_loop import AgentState, ToolAgentLoop
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from .episode_runner import TOOL_SCHEMAS, ThreadedEpisode, policy_max_side, task_id_of, with_page


@register("cua_browser_agent")
class BrowserAgentLoop(ToolAgentLoop):
    """`ToolAgentLoop` whose tools are the actions of one browser episode (see module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        schemas = [OpenAIFunctionToolSchema.model_validate(s) for s in TOOL_SCHEMAS]
        self.tools = {s.function.name: SimpleNamespace(name=s.function.name, tool_schema=s) for s in schemas}
        self.tool_schemas = [s.model_dump(exclude_unset=True, exclude_none=True) for s in schemas]
        self.episode = ThreadedEpisode(policy_max_side=policy_max_side())
        self.sees_images = getattr(self.processor, "image_processor", None) is not None
        self._start_images: list[Any] | None = None

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        try:
            images, text = await self.episode.reset(task_id_of(kwargs))
            row_has_images = any(isinstance(m.get("content"), list) and any(
                isinstance(p, dict) and p.get("type") in ("image", "video") for p in m["content"])
                for m in kwargs["raw_prompt"])
            self._start_images = None if row_has_images else (images if self.sees_images else [])
            messages = with_page(kwargs["raw_prompt"], images, text, sees_images=self.sees_images)
            output = await super().run(sampling_params, **{**kwargs, "raw_prompt": messages})
            output.extra_fields["trajectory"] = await self.episode.trajectory()
            return output
        finally:
            await self.episode.close()

    async def process_multi_modal_info(self, messages: list[dict]) -> dict:
        """The first turn's images. When the only ones are the start page's thumbnails, they are
        handed over as they are, as verl does with a tool turn's images; verl's own extraction
        (`qwen_vl_utils`, which needs torchvision) is kept for rows that bring images of their own."""
        if self._start_images is None:
            return await super().process_multi_modal_info(messages)
        return {"images": [img.convert("RGB") for img in self._start_images]} if self._start_images else {}

    async def _call_tool(self, tool_call: Any, tools_kwargs: dict[str, Any], agent_data: Any,
                         ) -> tuple[ToolResponse, float, dict]:
        import json

        try:
            args = json.loads(tool_call.arguments) if tool_call.arguments else {}
        except (TypeError, ValueError) as exc:
            return ToolResponse(text=f"invalid JSON arguments for {tool_call.name}: {exc}"), 0.0, {}
        images, text = await self.episode.act(tool_call.name, args if isinstance(args, dict) else {})
        if images and self.sees_images:
            return ToolResponse(text=text, image=images), 0.0, {}
        return ToolResponse(text=text), 0.0, {}  # a text policy: the screenshots go to the judge only

    async def _handle_processing_tools_state(self, agent_data: Any) -> Any:
        state = await super()._handle_processing_tools_state(agent_data)
        return AgentState.TERMINATED if self.episode.done else state
