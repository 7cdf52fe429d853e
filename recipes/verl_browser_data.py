"""verl dataset for the browser agent loop: one parquet row per browser_env task (repeated).

Each row has what verl's agent-loop path reads: `prompt` (chat messages), `agent_name`
(`cua_browser_agent`), `data_source`, `reward_model.ground_truth` (the task, for the verifier when
no trajectory is recorded) and `extra_info.task_id` (which episode the agent loop opens)::

    python recipes/verl_browser_data.py runs/verl-browser-data --repeat 64
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from browser_env.tasks import TASKS


def rows(repeat: int) -> list[dict]:
    out = []
    for task in TASKS.values():
        for _ in range(repeat):
            out.append({"data_source": "cua_browser", "agent_name": "cua_browser_agent",
                        "prompt": [{"role": "user", "content": task.instruction}],
                        "reward_model": {"style": "model", "ground_truth": json.dumps(
                            {"id": task.id, "instruction": task.instruction})},
                        "extra_info": {"task_id": task.id}})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--repeat", type=int, default=64)
    args = ap.parse_args()
    import pandas as pd  # verl's own dependency

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows(args.repeat)).to_parquet(out / "train.parquet")
    pd.DataFrame(rows(1)).to_parquet(out / "val.parquet")
    print(out / "train.parquet", out / "val.parquet")


if __name__ == "__main__":
    main()
