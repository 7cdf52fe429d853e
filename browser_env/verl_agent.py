"""verl agent loop `cua_browser_agent`: a browser_env episode per sample, scored inside the loop.

verl's multi-turn machinery is used through its public extension points only: the loop is verl's
`ToolAgentLoop` (chat template with tools, tool-call parsing, response masks, images in tool turns,
`max_tool_response_length`), the browser actions are verl tools (`browser_env.verl_tools`,
`BaseTool` subclasses handed to the constructor's `tools`), and the reward is the loop's own
`AgentLoopOutput.reward_score`. Per sample (verl builds one agent-loop object per sample):

1. the row's task (`extra_info.task_id`, or its instruction) starts a Chromium episode; the start
   page's text (and, for a VLM policy, its thumbnail) joins the user turn. That thumbnail reaches
   the rollout server as it is, like a tool turn's image, so a VLM run needs no `qwen_vl_utils`
   (and torchvision) unless the rows bring images of their own;
2. each tool call is a browser action run by verl's `_call_tool` on a `BrowserTool`; the
   screenshot comes back as the tool turn's image (a thumbnail, `policy_max_side`), the page text
   as its text, truncated by verl like any tool's;
3. a reply without a tool call ends verl's loop: it is the agent's final answer, recorded as the
   episode's `answer` step;
4. the recorded trajectory (full-size screenshots) goes to the reward service from here, and the
   loop returns `reward_score` with `reward_extra_info` (`score`, `uv_process`, `uv_outcome`,
   `uv_unscored`, `uv_grounded`). verl then skips its reward worker for the sample, and the
   screenshots never enter the training batch: only the scalars do (see docs/frameworks.md for the
   bytes per sample before and after).

Options (keys of the loop's entry in `recipes/configs/verl_agent_loop.yaml`, which verl passes to
the constructor; each falls back to the environment of the agent-loop worker, then the default):
`reward_url` (`$CUA_REWARD_URL`), `reward` (`combined`, `process`, `outcome`; `$CUA_VERL_REWARD`),
`on_failure` (`error`, the default: the sample's rollout fails loudly; or a number, flagged by
`uv_unscored = 1`; `$CUA_VERL_ON_FAILURE`), `require_screenshots`, `policy_max_side`
(`$CUA_POLICY_MAX_SIDE`). The YAML is read by every agent-loop worker, so what it says reaches
Ray workers that did not inherit the driver's environment.

Importing this module registers the loop; it needs verl in `browser_env.frameworks.TESTED`.
"""
from __future__ import annotations

from typing import Any

from .frameworks import require_tested

require_tested("verl")

from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, ToolListWrap, register
from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop

from reward.openrlhf import clean_answer
from reward.verl import compute_score_async
from verifier.errors import TrajectoryError

from . import episode_runner
from .episode_runner import ThreadedEpisode, task_id_of, with_page
from .verl_tools import browser_tools, tools_kwargs

#: Told to the policy with the start page, since verl's loop ends on a reply without a tool call.
HOW_TO_ANSWER = "\n\nWhen you know the answer, reply with it and call no tool: that ends the episode."
LOGS = ("uv_process", "uv_outcome", "uv_unscored", "uv_grounded")


@register("cua_browser_agent")
class BrowserAgentLoop(ToolAgentLoop):
    """`ToolAgentLoop` whose tools are the actions of one browser episode (see module doc)."""

    def __init__(self, *args: Any, tools: ToolListWrap | None = None, reward_url: str | None = None,
                 reward: str | None = None, on_failure: str | float | None = None,
                 require_screenshots: bool = False, policy_max_side: int | None = None, **kwargs: Any) -> None:
        processor = kwargs.get("processor")
        self.sees_images = getattr(processor, "image_processor", None) is not None
        given = list(tools.tools) if tools else []
        super().__init__(*args, tools=ToolListWrap([*browser_tools(sees_images=self.sees_images), *given]), **kwargs)
        self.episode = ThreadedEpisode(policy_max_side=policy_max_side or episode_runner.policy_max_side())
        self.reward_options = {"url": reward_url, "reward": reward, "on_failure": on_failure,
                               "require_screenshots": require_screenshots}
        self._start_images: list[Any] | None = None

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        try:
            images, text = await self.episode.reset(task_id_of(kwargs))
            row_has_images = any(isinstance(m.get("content"), list) and any(
                isinstance(p, dict) and p.get("type") in ("image", "video") for p in m["content"])
                for m in kwargs["raw_prompt"])
            self._start_images = None if row_has_images else (images if self.sees_images else [])
            messages = with_page(kwargs["raw_prompt"], images, text + HOW_TO_ANSWER, sees_images=self.sees_images)
            output = await super().run(sampling_params, **{
                **kwargs, "raw_prompt": messages, "tools_kwargs": tools_kwargs(self.episode, kwargs.get("tools_kwargs"))})
            await self._record_answer(output)
            output.reward_score, output.extra_fields["reward_extra_info"] = await self._score()
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

    async def _record_answer(self, output: AgentLoopOutput) -> None:
        """The policy's last reply, when it called no tool, is its final answer (verl stopped there)."""
        if self.episode.done or self.episode.env is None:
            return
        mask, ids = output.response_mask, output.response_ids
        end = len(mask)
        while end and not mask[end - 1]:
            end -= 1
        start = end
        while start and mask[start - 1]:
            start -= 1
        if start == end:
            return
        content, calls = await self.tool_parser.extract_tool_calls(ids[start:end], [t.tool_schema for t in self.tools.values()])
        if not calls:
            await self.episode.act("answer", {"text": clean_answer(content)})

    async def _score(self) -> tuple[float, dict[str, float]]:
        """The verifier's reward for the recorded episode, with the per-sample logs verl keeps."""
        trajectory = await self.episode.trajectory()
        on_failure = self.reward_options["on_failure"]
        if trajectory is None:  # the episode broke: nothing the judge could see
            if on_failure is None or str(on_failure) == "error":
                raise TrajectoryError("the browser episode failed, so there is nothing to score", field="environments")
            fill = float(on_failure)
            return fill, {"score": fill, "uv_process": fill, "uv_outcome": fill, "uv_unscored": 1.0, "uv_grounded": 0.0}
        out = await compute_score_async("cua_browser", "", None, {"trajectory": trajectory}, **self.reward_options)
        return float(out["score"]), {"score": float(out["score"]), **{k: float(out[k]) for k in LOGS}}
