"""verl: `compute_score` from the cua-verifier reward service.

    cua-verifier serve-reward --judge-url http://judge:8010/v1 --model judge
    export CUA_REWARD_URL=http://127.0.0.1:8012
    python -m verl.trainer.main_ppo ... \\
        reward.custom_reward_function.path=recipes/verl_compute_score.py \\
        reward.custom_reward_function.name=compute_score_async \\
        +reward.custom_reward_function.reward_kwargs.reward=outcome

`ground_truth` (the dataset's `reward_model.ground_truth`) names the task; `solution_str` is the
agent's answer; `extra_info["trajectory"]` carries a recorded episode when one is given. The browser
agent loop (recipes/verl_browser.sh) scores its own episodes inside the loop, so verl calls this
only for rows no agent loop scored. Returns `{"score", "uv_process", "uv_outcome",
"uv_unscored", "uv_grounded"}`; verl logs the extra keys per sample. `compute_score_async` is for
verl's reward loop (awaited on its event loop); `compute_score` blocks (RemoteRewardManager).
"""
from reward.verl import compute_score, compute_score_async

__all__ = ["compute_score", "compute_score_async"]
