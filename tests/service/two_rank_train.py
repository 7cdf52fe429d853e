"""One GRPO step of the tiny policy on each of two `accelerate launch` processes, rewards from the service.

    accelerate launch --multi_gpu --num_processes 2 (torchrun; gloo on CPU) two_rank_train.py SERVICE_URL POLICY_DIR OUT_DIR

Global batch = 4 = one group of 4 rollouts of one task, so each rank scores half of the group.
Each rank writes `rank<k>.json` (its rewards and how many rollouts it sent) to OUT_DIR.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from reward.remote import make_remote_rewards
from reward.testing import run_grpo_smoke, tiny_cua_dataset


def main(url: str, policy: str, out: str) -> None:
    r = make_remote_rewards(url)
    trainer = run_grpo_smoke([r.process, r.outcome], output_dir=Path(out) / "trainer", model_dir=policy,
                             dataset=tiny_cua_dataset(n_tasks=1), num_generations=4,
                             per_device_train_batch_size=2, max_steps=1)
    rank = trainer.accelerator.process_index
    logs = [h for h in trainer.state.log_history if "rewards/uv_outcome/mean" in h]
    Path(out, f"rank{rank}.json").write_text(json.dumps({
        "world_size": trainer.accelerator.num_processes, "requests": r.process.session.requests,
        "outcome_mean": logs[0]["rewards/uv_outcome/mean"] if logs else None}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
