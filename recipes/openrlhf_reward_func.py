"""OpenRLHF: rewards from the cua-verifier reward service (OpenRLHF 0.10.2+ flags).

Start the service next to the judge (one for all trainer nodes), then point OpenRLHF at this file::

    cua-verifier serve-reward --host 0.0.0.0 --judge-url http://judge:8010/v1 --model judge  # key in $CUA_REWARD_API_KEY
    export CUA_REWARD_URL=http://reward-host:8012 CUA_REWARD_API_KEY=...
    python -m openrlhf.cli.train_ppo_ray ... --reward.remote_url recipes/openrlhf_reward_func.py --data.label_key task

Each row's label (`--data.label_key`) names the task: `{"id": "...", "instruction": "..."}` or the
plain instruction; a label `{"trajectory": {...}}` carries a recorded rollout. Text rows are verified
on the answer alone (action-only mode, `uv_grounded` 0): for browser episodes whose screenshots
are judged, use the agent instead (recipes/openrlhf_browser.sh). On a loopback service without a
key, `--reward.remote_url http://127.0.0.1:8012/v1/openrlhf` works directly.
"""
from reward.openrlhf import make_reward_func

#: `reward_func(queries, prompts, labels)` -> {"rewards", "scores", "extra_logs"} (torch tensors).
#: An unscored row gets the mean of its group's scored rows (its advantage is about zero), flagged in
#: extra_logs["uv_unscored"]: OpenRLHF swallows a reward function's exception, so raising would hide
#: the cause (reward.openrlhf and reward.unscored_fill explain).
reward_func = make_reward_func(kind="combined", on_failure="mean")
