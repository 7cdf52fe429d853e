#!/usr/bin/env bash
# OpenRLHF (0.10.2+ flags) on browser_env: each prompt runs one browser episode in
# browser_env/openrlhf_agent.py; the recorded trajectory is scored by the reward service.
# Needs OpenRLHF with its vLLM engines on GPUs, Chromium on the rollout hosts, the judge and:
#   cua-verifier serve-reward --judge-url http://127.0.0.1:8010/v1 --model judge   # port 8012
# Data: a JSONL of {"prompt": <instruction>, "task": {"id": <browser_env task id>, ...}} rows, e.g.
#   python -c "import json; from browser_env.tasks import TASKS; [print(json.dumps({'prompt': t.instruction, 'task': {'id': t.id, 'instruction': t.instruction}})) for t in TASKS.values()]" > runs/browser_tasks.jsonl
set -euo pipefail
export CUA_REWARD_URL=${CUA_REWARD_URL:-http://127.0.0.1:8012}
export CUA_OPENRLHF_REWARD=${CUA_OPENRLHF_REWARD:-combined} CUA_OPENRLHF_ON_FAILURE=${CUA_OPENRLHF_ON_FAILURE:-mean}
python -m openrlhf.cli.train_ppo_ray \
  --train.agent_func_path browser_env/openrlhf_agent.py \
  --data.label_key task \
  "$@"
