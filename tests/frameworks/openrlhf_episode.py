"""Run inside the OpenRLHF test environment (.venv-openrlhf): the browser agent loaded the way
OpenRLHF loads `--train.agent_func_path` (by file path; `AgentExecutor` must subclass its
`AgentExecutorBase`), then OpenRLHF's own `MultiTurnAgentExecutor.execute` plays one episode per
policy, with the reward service at argv[1] scoring the recorded trajectory.

Three policies: a text one (ChatML tokenizer, no processor) and two VLMs of different families
(tests/frameworks/tiny_policies.py: a Qwen2-VL processor, and a Gemma 3 processor whose template
has no tool role), so the agent must write each family's own turns and image placeholders, and
OpenRLHF's `process_prompt_with_images` must find one placeholder per screenshot.

The policy is scripted at OpenRLHF's vLLM-engine interface (`llm_engine.generate(token ids)`),
since no vLLM engine runs on CPU: like vLLM, it returns the end-of-turn token among the token ids
and leaves it out of the text. Prints one JSON line for the test to check.
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from openrlhf.utils.agent import AgentExecutorBase

sys.path.insert(0, str(Path(__file__).parent))

from tiny_policies import END_OF_TURN, gemma_processor, qwen_processor, qwen_tokenizer

REPO = Path(__file__).resolve().parents[2]
TASK_ID = "library-riverside-saturday"
INSTRUCTION = "At what time does the Riverside Branch of the City Library open on Saturdays?"
SCRIPT = ['<tool_call>\n{"name": "goto", "arguments": {"url": "/library/"}}\n</tool_call>',
          '<tool_call>\n{"name": "scroll", "arguments": {"direction": "down"}}\n</tool_call>',
          "The Riverside Branch opens at 10:00 on Saturdays."]
FOREIGN = {"qwen": ("<start_of_turn>", "<end_of_turn>", "<start_of_image>"),
           "gemma": ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|image_pad|>", "<tool_response>")}


class ScriptedEngine:
    """OpenRLHF's engine interface (`generate(prompt token ids, sampling params)`), scripted."""

    def __init__(self, tok: Any, end: str) -> None:
        self.tok, self.end, self.turn, self.prompts, self.prompt_ids, self.images = tok, end, 0, [], [], []

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None) -> Any:
        self.prompts.append(self.tok.decode(prompt_token_ids))
        self.prompt_ids.append(list(prompt_token_ids))
        self.images.append(len((multi_modal_data or {}).get("image") or []))
        text = SCRIPT[min(self.turn, len(SCRIPT) - 1)]
        self.turn += 1
        ids = self.tok.encode(text + self.end, add_special_tokens=False)
        return SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, text=text, finish_reason="stop", logprobs=None)])


def load_agent_executor(path: Path) -> AgentExecutorBase:
    """What OpenRLHF's `_load_agent_executor` does with `--train.agent_func_path` (its module also
    imports vLLM, which does not run here, so the few lines are repeated)."""
    spec = importlib.util.spec_from_file_location("agent_module", str(path))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    assert issubclass(module.AgentExecutor, AgentExecutorBase)
    return module.AgentExecutor()


async def episode(policy: Any, family: str, path: Path) -> dict[str, Any]:
    executor = load_agent_executor(path)
    tok = getattr(policy, "tokenizer", policy)
    images_per_step: list[int] = []
    image_sizes: set[tuple[int, int]] = set()
    step = executor.agent_instance_cls.step

    async def counted_step(self: Any, states: dict, **kw: Any) -> dict:  # what each step hands OpenRLHF
        out = await step(self, states, **kw)
        images_per_step.append(len(out["environment_images"] or []))
        image_sizes.update(img.size for img in out["environment_images"] or [])
        return out

    executor.agent_instance_cls.step = counted_step
    engine = ScriptedEngine(tok, END_OF_TURN[family])
    label = json.dumps({"id": TASK_ID, "instruction": INSTRUCTION})
    out = await executor.execute(INSTRUCTION, label, SimpleNamespace(max_tokens=None, logprobs=None), 16384,
                                 policy, engine)
    mm = out["mm_train_inputs"] or {}
    image_id = {"qwen": tok.convert_tokens_to_ids("<|image_pad|>"),
                "gemma": tok.convert_tokens_to_ids("<image_soft_token>")}[family]
    end = END_OF_TURN[family]
    return {"turns": engine.turn, "reward": out["reward"], "scores": out["scores"],
            "extra_logs": {k: float(v) for k, v in out["extra_logs"].items()},
            "first_prompt_head": engine.prompts[0][:40],
            "page_in_first_prompt": "The browser shows" in engine.prompts[0],
            "tools_in_first_prompt": '"name": "goto"' in engine.prompts[0],
            "tool_result_in_prompt": "Riverside" in engine.prompts[-1] and len(engine.prompts[-1]) > len(engine.prompts[0]),
            "foreign_markup": [m for m in FOREIGN[family] if any(m in p for p in engine.prompts)],
            "doubled_end_of_turn": any(end + end in p.replace("\n", "") for p in engine.prompts),
            "image_tokens_per_prompt": [ids.count(image_id) for ids in engine.prompt_ids],
            "images_per_prompt": engine.images,
            "pixel_images": int(mm["image_grid_thw"].shape[0]) if "image_grid_thw" in mm
            else int(mm["pixel_values"].shape[0]) if "pixel_values" in mm else 0,
            "action_ranges": len(out["action_ranges"]), "environment_images": images_per_step,
            "image_sizes": sorted(image_sizes)}


async def main(url: str) -> dict[str, Any]:
    os.environ["CUA_REWARD_URL"] = url  # the agent's settings read it when its executor is built
    path = REPO / "browser_env" / "openrlhf_agent.py"
    return {"text": await episode(qwen_tokenizer(), "qwen", path),
            "qwen": await episode(qwen_processor(), "qwen", path),
            "gemma": await episode(gemma_processor(), "gemma", path)}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1])), default=str))
