"""Run inside the verl test environment (.venv-verl): browser episodes through verl's own agent-loop
registry, `ToolAgentLoop` and tool lifecycle, then verl's own `AgentLoopWorker` post-processing
into the training batch (`DataProto`), against the reward service at argv[1].

The policy is scripted at verl's rollout-server interface (`server_manager.generate`: token ids
and images in, token ids out), since no vLLM/SGLang server runs on CPU; everything between that
server and the batch is verl's code. Episodes: a text policy (ChatML tokenizer, no processor,
`max_tool_response_length` small enough to cut the page text), then two VLM policies of different
families: a Qwen2-VL processor and a LLaVA one (CLIP image processor), both on PIL, so the server
must receive the screenshots as images. Prints one JSON line for the test to check; with
`--figures` it only prints the batch figures (used to measure another checkout of the loop).
"""
from __future__ import annotations

import asyncio
import json
import pickle
import sys
from pathlib import Path
from typing import Any

import hydra
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import (
    AgentLoopWorker,
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).parent))

from tiny_policies import qwen_processor

from serving.tiny_model import _build_tokenizer

TASK_ID = "library-riverside-saturday"
INSTRUCTION = "At what time does the Riverside Branch of the City Library open on Saturdays?"
ANSWER = "The Riverside Branch opens at 10:00 on Saturdays."
SCRIPT = [("goto", {"url": "/library/"}), ("scroll", {"direction": "down"}), ("answer", ANSWER)]
TRUNCATE = 120  # the text episode's max_tool_response_length: shorter than any page text


class ScriptedServer:
    """verl's rollout-server interface, answering the scripted tool calls (then the answer) as token ids."""

    def __init__(self, tok: Any) -> None:
        self.tok, self.turn, self.prompts, self.images = tok, 0, [], []

    async def generate(self, *, request_id: str, prompt_ids: list[int], sampling_params: dict,
                       image_data: list[Any] | None = None, **kw: Any) -> Any:
        self.prompts.append(self.tok.decode(prompt_ids))
        self.images.append([img.size for img in image_data or []])
        name, args = SCRIPT[min(self.turn, len(SCRIPT) - 1)]
        self.turn += 1
        text = args if name == "answer" else \
            f'<tool_call>\n{json.dumps({"name": name, "arguments": args})}\n</tool_call>'
        return TokenOutput(token_ids=self.tok.encode(text + "<|im_end|>", add_special_tokens=False), log_probs=None)


def config(max_tool_response_length: int) -> Any:
    return OmegaConf.create({
        "actor_rollout_ref": {"rollout": {
            "prompt_length": 4096, "response_length": 8192, "full_determinism": False,
            "multi_turn": {"max_user_turns": 15, "max_assistant_turns": 15, "max_parallel_calls": 1,
                           "max_tool_response_length": max_tool_response_length,
                           "tool_response_truncate_side": "right", "format": "hermes"}}},
        "data": {}})


def png_size(data_url: str) -> tuple[int, int]:
    import base64
    import io

    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1]))).size


def llava_processor(tok: Any) -> Any:
    """A LLaVA processor over the test tokenizer: 5 image tokens per image, PIL only."""
    from transformers import LlavaProcessor
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    return LlavaProcessor(image_processor=CLIPImageProcessorPil(size={"shortest_edge": 28},
                                                                crop_size={"height": 28, "width": 28}),
                          tokenizer=tok, patch_size=14, vision_feature_select_strategy="full",
                          num_additional_image_tokens=1, chat_template=tok.chat_template, image_token="<|image_pad|>")


async def to_batch(cfg: Any, tok: Any, processor: Any, output: Any) -> Any:
    """verl's own worker post-processing of one sample into the training batch (`DataProto`)."""
    worker = object.__new__(AgentLoopWorker)  # only the post-processing state: no Ray, no servers
    worker.config, worker.rollout_config = cfg, cfg.actor_rollout_ref.rollout
    worker.tokenizer, worker.processor = tok, processor
    worker.mm_processor_kwargs, worker.reward_loop_worker_handles, worker.distillation_enabled = {}, None, False
    kwargs = {"raw_prompt": [{"role": "user", "content": INSTRUCTION}], "extra_info": {"task_id": TASK_ID},
              "data_source": "cua_browser", "tools_kwargs": {}}
    padded = await worker._agent_loop_postprocess(output, False, **kwargs)
    return worker._postprocess([padded], input_non_tensor_batch=None)


def figures(batch: Any) -> dict[str, Any]:
    blob = pickle.dumps(batch)
    return {"batch_bytes_per_sample": len(blob) // len(batch),
            "non_tensor_bytes_per_sample": len(pickle.dumps(batch.non_tensor_batch)) // len(batch),
            "batch_has_data_url": b"data:image/" in blob, "batch_keys": sorted(batch.non_tensor_batch),
            "rm_scores": "rm_scores" in batch.batch.keys()}  # noqa: SIM118 - a TensorDict has no `in`


async def episode(tok: Any, processor: Any, *, max_tool_response_length: int = 4096) -> dict[str, Any]:
    cfg = config(max_tool_response_length)
    server = ScriptedServer(tok)
    loop = hydra.utils.instantiate(config=_agent_loop_registry["cua_browser_agent"],
                                   trainer_config=DictConfigWrap(config=cfg), server_manager=server,
                                   tokenizer=tok, processor=processor, dataset_cls=RLHFDataset,
                                   data_config=DictConfigWrap(cfg.data), tools=ToolListWrap([]))
    out = await loop.run({"temperature": 1.0}, raw_prompt=[{"role": "user", "content": INSTRUCTION}],
                         extra_info={"task_id": TASK_ID}, tools_kwargs={})
    traj = loop.episode.env.recorded_trajectory.model_dump(mode="json") if loop.episode.env else None
    batch = await to_batch(cfg, tok, processor, out)
    extra = out.extra_fields.get("reward_extra_info") or {}
    return {"turns": server.turn, "actions": [s["action"] for s in traj["steps"]] if traj else None,
            "final_answer": traj and traj.get("final_answer"),
            "screenshots": len(traj["screenshots"]) if traj else 0,
            "recorded_sizes": sorted({png_size(s["data_url"]) for s in traj["screenshots"]}) if traj else [],
            "tool_turn_in_prompt": "<|im_start|>tool" in server.prompts[-1] or "<tool_response>" in server.prompts[-1],
            "truncated_tool_text": "...(truncated)" in server.prompts[-1],
            "response_mask_has_tool_tokens": 0 in out.response_mask,
            "policy_images": server.images, "image_pads": [p.count("<|image_pad|>") for p in server.prompts],
            "output_images": len((out.multi_modal_data or {}).get("images") or []),
            "reward": out.reward_score, "extra": extra, **figures(batch)}


async def broken_episode(tok: Any) -> dict[str, Any]:
    """What the loop returns for an episode with nothing recorded (the browser never started), per
    `on_failure`: `error` raises, a number is returned flagged `uv_unscored = 1`."""
    cfg, out = config(4096), {}
    for on_failure in ("error", 0.25):
        loop = hydra.utils.instantiate(config=_agent_loop_registry["cua_browser_agent"], on_failure=on_failure,
                                       trainer_config=DictConfigWrap(config=cfg), server_manager=None,
                                       tokenizer=tok, processor=None, dataset_cls=RLHFDataset,
                                       data_config=DictConfigWrap(cfg.data), tools=ToolListWrap([]))
        try:
            out[str(on_failure)] = list(await loop._score())
        except Exception as exc:  # noqa: BLE001 - reported for the test to check
            out[str(on_failure)] = type(exc).__name__
        await loop.episode.close()
    return out


def private_overrides() -> list[str]:
    """Methods of `ToolAgentLoop` (or its bases) with a leading underscore that the loop redefines."""
    cls = hydra.utils.get_class(_agent_loop_registry["cua_browser_agent"]["_target_"])
    return sorted(n for n, v in vars(cls).items()
                  if n.startswith("_") and not n.startswith("__") and callable(v) and hasattr(ToolAgentLoop, n))


async def main(url: str) -> dict[str, Any]:
    import os

    os.environ["CUA_REWARD_URL"] = url
    tok = _build_tokenizer(corpus="")  # its chat template is what counts here: no 5-s English training
    for entry in OmegaConf.load(REPO / "recipes" / "configs" / "verl_agent_loop.yaml"):  # as AgentLoopWorker does
        _agent_loop_registry[entry.name] = entry
    text = await episode(tok, None, max_tool_response_length=TRUNCATE)
    qwen = qwen_processor()
    vlm = await episode(qwen.tokenizer, qwen)
    llava = await episode(tok, llava_processor(tok))
    return {**text, "vlm": vlm, "llava": llava, "private_overrides": private_overrides(),
            "broken": await broken_episode(tok)}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1])), default=str))
