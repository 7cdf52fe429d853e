"""TRL GRPO on several ranks, all rewards from one cua-verifier reward service.

    cua-verifier serve-reward --judge-url http://127.0.0.1:8010/v1 --model judge &   # prints its URL
    CUA_REWARD_URL=http://127.0.0.1:8012 accelerate launch --num_processes 8 recipes/grpo_remote_rewards.py MODEL

Every rank sends its slice of each group to the service, whose single stage cache writes one rubric
per task for all ranks. `reward.remote.uv_process` / `uv_outcome` keep the names, the `None`
semantics and the logged sub-metrics of the in-process rewards (`trl grpo --reward_funcs
reward.remote.uv_process reward.remote.uv_outcome` works too).
"""
from __future__ import annotations

import sys

from reward.remote import make_remote_rewards


def main(model: str) -> None:
    from trl import GRPOConfig, GRPOTrainer

    from reward.testing import tiny_cua_dataset

    r = make_remote_rewards()  # $CUA_REWARD_URL, key from $CUA_REWARD_API_KEY
    args = GRPOConfig(output_dir="grpo-remote", num_generations=8, per_device_train_batch_size=4,
                      reward_weights=[0.5, 1.0], multi_objective_aggregation="normalize_then_sum",
                      max_steps=10, report_to=[])
    GRPOTrainer(model=model, reward_funcs=[r.process, r.outcome], args=args,
                train_dataset=tiny_cua_dataset(n_tasks=4)).train()


if __name__ == "__main__":
    main(sys.argv[1])
