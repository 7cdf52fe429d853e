"""OpenRLHF: rewards from the cua-verifier reward service.

Start the service next to the judge (one for all trainer nodes), then point OpenRLHF at this file::

    cua-verifier serve-reward --host 0.0.0.0 --judge-url http://judge:8010/v1 --model judge  # key in $CUA_REWARD_API_KEY
    export CUA_REWARD_URL=http://reward-host:8012 CUA_REWARD_API_KEY=...
    python -m openrlhf.cli.train_ppo_ray ... --remote_rm_url recipes/openrlhf_reward_func.py --label_key task

Each row's label (`--label_key`) names the task: `{"id": "...", "instruction": "..."}` or the plain
instruction; a label `{"trajectory": {...}}` carries a rollout recorded by the agent harness. On a
loopback service without a key, `--remote_rm_url http://127.0.0.1:8012/v1/openrlhf` works directly.
"""
from reward.openrlhf import make_reward_func

#: `reward_func(queries, prompts, labels)` -> {"rewards", "scores", "extra_logs"} (torch tensors).
#: A rollout the verifier could not score fails the batch (on_failure="error"); pass a number to
#: write that value instead, flagged in extra_logs["uv_unscored"].
reward_func = make_reward_func(kind="combined", on_failure="error")
