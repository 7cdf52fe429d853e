#!/usr/bin/env bash
# verl GRPO on browser_env: the verl counterpart of recipes/grpo_browser.py. Needs verl 0.9 (and its
# vLLM or SGLang rollout server) on GPUs, Chromium on the rollout hosts (browser_env/setup_chromium.sh),
# the judge and the reward service:
#   cua-verifier serve-judge ...  (port 8010, served model name `judge`)
#   cua-verifier serve-reward --judge-url http://127.0.0.1:8010/v1 --model judge   # port 8012
# Each sample runs one browser episode in the `cua_browser_agent` agent loop, which sends the recorded
# trajectory (screenshots included) to the reward service itself and returns the sample's reward
# (AgentLoopOutput.reward_score): verl skips its reward worker and no screenshot enters the training
# batch. The loop's options (reward URL, reward kind, on_failure) are in recipes/configs/verl_agent_loop.yaml,
# which every agent-loop worker reads; $CUA_REWARD_URL below is their fallback on a single node.
# Tested on verl 0.9 (browser_env.frameworks.TESTED; importing the loop refuses another release).
set -euo pipefail
MODEL=${MODEL:-Qwen/Qwen2.5-VL-7B-Instruct}
DATA=${DATA:-runs/verl-browser-data}
export CUA_REWARD_URL=${CUA_REWARD_URL:-http://127.0.0.1:8012}
export CUA_POLICY_MAX_SIDE=${CUA_POLICY_MAX_SIDE:-448}   # policy thumbnails; the judge gets full size
python recipes/verl_browser_data.py "$DATA"
python -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  data.train_files="$DATA/train.parquet" data.val_files="$DATA/val.parquet" \
  data.train_batch_size=16 data.max_prompt_length=4096 data.max_response_length=8192 \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.rollout.n=8 \
  actor_rollout_ref.rollout.multi_turn.enable=True \
  actor_rollout_ref.rollout.multi_turn.format=hermes \
  actor_rollout_ref.rollout.multi_turn.max_assistant_turns=15 \
  actor_rollout_ref.rollout.agent.agent_loop_config_path=recipes/configs/verl_agent_loop.yaml \
  reward.custom_reward_function.path=recipes/verl_compute_score.py \
  reward.custom_reward_function.name=compute_score_async \
  trainer.total_epochs=1 "$@"
