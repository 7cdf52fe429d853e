"""Run inside the verl test environment (.venv-verl): one browser episode through verl's own agent-loop
registry and `ToolAgentLoop` machinery, then verl's reward loader and naive reward manager calling
`compute_score_async` with the agent loop's extra fields, against the reward service at argv[1].

The policy is scripted at verl's rollout-server interface (`server_manager.generate`: token ids
and images in, token ids out), since no vLLM/SGLang server runs on CPU; everything between that
server and the reward is verl's code. Two episodes: a text policy (no processor), then a VLM
policy whose processor is a tiny LLaVA one (CLIP image processor on PIL: Qwen2-VL's processor
cannot be built without torchvision, which has no CPU build here), so the server must receive the
screenshots as images. Prints one JSON line for the test to check.
"""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import hydra
import numpy as np
import torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from serving.tiny_model import _build_tokenizer

TASK_ID = "library-riverside-saturday"
SCRIPT = [("goto", {"url": "/library/"}), ("scroll", {"direction": "down"}),
          ("answer", {"text": "The Riverside Branch opens at 10:00 on Saturdays."})]


class ScriptedServer:
    """verl's rollout-server interface, answering the scripted tool calls as token ids."""

    def __init__(self, tok: Any) -> None:
        self.tok, self.turn, self.prompts, self.images = tok, 0, [], []

    async def generate(self, *, request_id: str, prompt_ids: list[int], sampling_params: dict,
                       image_data: list[Any] | None = None, **kw: Any) -> Any:
        self.prompts.append(self.tok.decode(prompt_ids))
        self.images.append([img.size for img in image_data or []])
        name, args = SCRIPT[min(self.turn, len(SCRIPT) - 1)]
        self.turn += 1
        text = f'<tool_call>\n{json.dumps({"name": name, "arguments": args})}\n</tool_call><|im_end|>'
        return TokenOutput(token_ids=self.tok.encode(text, add_special_tokens=False), log_probs=None)


def config() -> Any:
    return OmegaConf.create({
        "actor_rollout_ref": {"rollout": {
            "prompt_length": 4096, "response_length": 8192, "full_determinism": False,
            "multi_turn": {"max_user_turns": 15, "max_assistant_turns": 15, "max_parallel_calls": 1,
                           "max_tool_response_length": 2048, "tool_response_truncate_side": "right",
                           "format": "hermes"}}},
        "data": {},
        "reward": {"custom_reward_function": {
            "path": str(REPO / "recipes" / "verl_compute_score.py"), "name": "compute_score_async",
            "reward_kwargs": {"reward": "outcome", "on_failure": "error"}}}})


def png_size(data_url: str) -> tuple[int, int]:
    import base64
    import io

    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1]))).size


def tiny_vlm_processor(tok: Any) -> Any:
    """A LLaVA processor over the test tokenizer: 5 image tokens per image, PIL only."""
    from transformers import LlavaProcessor
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    return LlavaProcessor(image_processor=CLIPImageProcessorPil(size={"shortest_edge": 28},
                                                                crop_size={"height": 28, "width": 28}),
                          tokenizer=tok, patch_size=14, vision_feature_select_strategy="full",
                          num_additional_image_tokens=1, chat_template=tok.chat_template, image_token="<|image_pad|>")


async def main(url: str) -> dict[str, Any]:
    import os

    os.environ["CUA_REWARD_URL"] = url
    tok = _build_tokenizer(corpus="")  # its chat template is what counts here: no 5-s English training
    for entry in OmegaConf.load(REPO / "recipes" / "configs" / "verl_agent_loop.yaml"):  # as AgentLoopWorker does
        _agent_loop_registry[entry.name] = entry
    text = await episode(tok, None)
    vlm = await episode(tok, tiny_vlm_processor(tok))
    return {**text, "vlm": vlm}


async def episode(tok: Any, processor: Any) -> dict[str, Any]:
    cfg = config()
    server = ScriptedServer(tok)
    loop = hydra.utils.instantiate(config=_agent_loop_registry["cua_browser_agent"],
                                   trainer_config=DictConfigWrap(config=cfg), server_manager=server,
                                   tokenizer=tok, processor=processor, dataset_cls=RLHFDataset,
                                   data_config=DictConfigWrap(cfg.data), tools=ToolListWrap([]))
    instruction = "At what time does the Riverside Branch of the City Library open on Saturdays?"
    out = await loop.run({"temperature": 1.0}, raw_prompt=[{"role": "user", "content": instruction}],
                         extra_info={"task_id": TASK_ID}, tools_kwargs={})
    traj = out.extra_fields["trajectory"]

    # the reward side: verl's loader (reward_kwargs merged) and its naive reward manager
    compute_score = get_custom_reward_fn(cfg)
    manager = NaiveRewardManager(cfg, tok, compute_score)
    responses = torch.tensor([out.response_ids])
    data = DataProto.from_dict(
        tensors={"responses": responses, "attention_mask": torch.ones_like(responses)},
        non_tensors={"data_source": np.array(["cua_browser"], dtype=object),
                     "reward_model": np.array([{"ground_truth": json.dumps({"id": TASK_ID, "instruction": instruction})}],
                                              dtype=object),
                     "extra_info": np.array([{}], dtype=object),
                     "tool_extra_fields": np.array([out.extra_fields], dtype=object)})
    scored = await manager.run_single(data)
    return {"turns": server.turn, "actions": [s["action"] for s in traj["steps"]] if traj else None,
            "screenshots": len(traj["screenshots"]) if traj else 0, "final_answer": traj and traj["final_answer"],
            "tool_turn_in_prompt": "<|im_start|>tool" in server.prompts[-1],
            "response_mask_has_tool_tokens": 0 in out.response_mask,
            "policy_images": server.images, "image_pads": [p.count("<|image_pad|>") for p in server.prompts],
            "output_images": len((out.multi_modal_data or {}).get("images") or []),
            "recorded_sizes": sorted({png_size(s["data_url"]) for s in traj["screenshots"]}) if traj else [],
            "reward": scored["reward_score"], "extra": scored["reward_extra_info"]}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1])), default=str))
