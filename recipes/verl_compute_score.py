"""verl: `compute_score` from the cua-verifier reward service.

    cua-verifier serve-reward --judge-url http://judge:8010/v1 --model judge
    export CUA_REWARD_URL=http://127.0.0.1:8012 CUA_VERL_REWARD=combined
    python -m verl.trainer.main_ppo ... \\
        custom_reward_function.path=recipes/verl_compute_score.py custom_reward_function.name=compute_score

`ground_truth` (the dataset's `reward_model.ground_truth`) names the task; `solution_str` is the
agent's final answer; `extra_info["trajectory"]` may carry a recorded rollout. Returns
`{"score", "uv_process", "uv_outcome", "uv_unscored"}`; verl logs the extra keys per sample.
For verl's async reward loop use `compute_score_async`.
"""
from reward.verl import compute_score, compute_score_async

__all__ = ["compute_score", "compute_score_async"]
