"""Run inside the OpenRLHF test environment (.venv-openrlhf): the browser agent loaded the way
OpenRLHF loads `--train.agent_func_path` (by file path; `AgentExecutor` must subclass its
`AgentExecutorBase`), then OpenRLHF's own `MultiTurnAgentExecutor.execute` plays one episode,
with the reward service at argv[1] scoring the recorded trajectory.

The policy is scripted at OpenRLHF's vLLM-engine interface (`llm_engine.generate(token ids)`),
since no vLLM engine runs on CPU; everything between the engine and the reward is OpenRLHF's code.
Prints one JSON line for the test to check.
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

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from serving.tiny_model import _build_tokenizer

TASK_ID = "library-riverside-saturday"
INSTRUCTION = "At what time does the Riverside Branch of the City Library open on Saturdays?"
SCRIPT = ['<tool_call>\n{"name": "goto", "arguments": {"url": "/library/"}}\n</tool_call>',
          '<tool_call>\n{"name": "scroll", "arguments": {"direction": "down"}}\n</tool_call>',
          "The Riverside Branch opens at 10:00 on Saturdays."]


class ScriptedEngine:
    """OpenRLHF's engine interface (`generate(prompt token ids, sampling params)`), scripted."""

    def __init__(self, tok: Any) -> None:
        self.tok, self.turn, self.prompts = tok, 0, []

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None) -> Any:
        self.prompts.append(self.tok.decode(prompt_token_ids))
        text = SCRIPT[min(self.turn, len(SCRIPT) - 1)]
        self.turn += 1
        ids = self.tok.encode(text + "<|im_end|>", add_special_tokens=False)
        return SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, text=text, finish_reason="stop", logprobs=None)])


def load_agent_executor(path: Path) -> AgentExecutorBase:
    """What OpenRLHF's `_load_agent_executor` does with `--train.agent_func_path` (its module also
    imports vLLM, which does not run here, so the few lines are repeated)."""
    spec = importlib.util.spec_from_file_location("agent_module", str(path))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    assert issubclass(module.AgentExecutor, AgentExecutorBase)
    return module.AgentExecutor()


async def main(url: str) -> dict[str, Any]:
    os.environ["CUA_REWARD_URL"] = url
    tok = _build_tokenizer(corpus="")  # its chat template is what counts here: no 5-s English training
    executor = load_agent_executor(REPO / "browser_env" / "openrlhf_agent.py")
    images_per_step: list[int] = []
    image_sizes: set[tuple[int, int]] = set()
    step = executor.agent_instance_cls.step

    async def counted_step(self: Any, states: dict, **kw: Any) -> dict:  # what each step hands OpenRLHF
        out = await step(self, states, **kw)
        images_per_step.append(len(out["environment_images"] or []))
        image_sizes.update(img.size for img in out["environment_images"] or [])
        return out

    executor.agent_instance_cls.step = counted_step
    engine = ScriptedEngine(tok)
    prompt = tok.apply_chat_template([{"role": "user", "content": INSTRUCTION}], tokenize=False,
                                     add_generation_prompt=True)
    label = json.dumps({"id": TASK_ID, "instruction": INSTRUCTION})
    out = await executor.execute(prompt, label, SimpleNamespace(max_tokens=None, logprobs=None), 16384, tok, engine)
    return {"turns": engine.turn, "reward": out["reward"], "scores": out["scores"],
            "extra_logs": {k: float(v) for k, v in out["extra_logs"].items()},
            "page_in_first_prompt": "The browser shows" in engine.prompts[0],
            "tool_response_in_prompt": "<tool_response>" in engine.prompts[-1],
            "action_ranges": len(out["action_ranges"]), "environment_images": images_per_step,
            "image_sizes": sorted(image_sizes)}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1])), default=str))
