"""Run inside .venv-openrlhf: the browser agent inside Ray actors that did not inherit the
driver's environment, as OpenRLHF's vLLM engine actors load it (by file path, in the actor).

argv[1] is the reward service's URL, argv[2] a folder for the configured agent file. The driver
itself has no `CUA_*` variable (the test starts it without them), so the actors' environment holds
only what Ray's `runtime_env` gives them. Three actors:
- `configured`: a configured agent file (`configured(reward_url=...)`), no variables at all;
- `runtime_env`: the plain agent file, `CUA_REWARD_URL` passed through `runtime_env.env_vars`;
- `bare`: the plain agent file and nothing: its settings must fall back to the defaults.
The first two play one episode each (text policy) and must be scored by the service at argv[1].
Prints one JSON line.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import ray

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


@ray.remote
class EngineStandIn:
    """Stands in for OpenRLHF's `RolloutRayActor`: builds the executor from the agent file in the actor."""

    def __init__(self, agent_path: str) -> None:
        sys.path.insert(0, str(HERE))
        from openrlhf_episode import load_agent_executor

        self.env = sorted(k for k in os.environ if k.startswith("CUA_"))
        self.executor = load_agent_executor(Path(agent_path))

    async def run(self, play: bool) -> dict[str, Any]:
        from types import SimpleNamespace

        from openrlhf_episode import INSTRUCTION, TASK_ID, ScriptedEngine
        from tiny_policies import END_OF_TURN, qwen_tokenizer

        out: dict[str, Any] = {"env": self.env, "reward_url": self.executor.settings.reward_url}
        if play:
            tok = qwen_tokenizer()
            label = json.dumps({"id": TASK_ID, "instruction": INSTRUCTION})
            result = await self.executor.execute(INSTRUCTION, label, SimpleNamespace(max_tokens=None, logprobs=None),
                                                 16384, tok, ScriptedEngine(tok, END_OF_TURN["qwen"]))
            out["extra_logs"] = {k: float(v) for k, v in result["extra_logs"].items()}
        return out


def main(url: str, folder: str) -> dict[str, Any]:
    assert not any(k.startswith("CUA_") for k in os.environ), "the driver must not have the variables"
    configured = Path(folder) / "openrlhf_agent.py"
    configured.write_text("from browser_env.openrlhf_agent import configured\n"
                          f"AgentExecutor = configured(reward_url={url!r}, policy_max_side=448)\n")
    plain = str(REPO / "browser_env" / "openrlhf_agent.py")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        actors = {"configured": EngineStandIn.remote(str(configured)),
                  "runtime_env": EngineStandIn.options(runtime_env={"env_vars": {"CUA_REWARD_URL": url}}).remote(plain),
                  "bare": EngineStandIn.remote(plain)}
        return dict(zip(actors, ray.get([a.run.remote(name != "bare") for name, a in actors.items()]), strict=True))
    finally:
        ray.shutdown()


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2]), default=str))
