#!/usr/bin/env bash
# OpenRLHF (tested on 0.11: browser_env.frameworks.TESTED) on browser_env: each prompt runs one browser
# episode in browser_env/openrlhf_agent.py; the recorded trajectory is scored by the reward service.
# Needs OpenRLHF with its vLLM engines on GPUs, Chromium on the rollout hosts, the judge and:
#   cua-verifier serve-reward --judge-url http://127.0.0.1:8010/v1 --model judge   # port 8012
# OpenRLHF pins ray==2.55.0 and cua-verifier[ray] needs a newer Ray: run the reward service (and any
# Ray scoring) from its own environment, not from OpenRLHF's (docs/frameworks.md).
# Data: a JSONL of {"prompt": <instruction>, "task": {"id": <browser_env task id>, ...}} rows, e.g.
#   python -c "import json; from browser_env.tasks import TASKS; [print(json.dumps({'prompt': t.instruction, 'task': {'id': t.id, 'instruction': t.instruction}})) for t in TASKS.values()]" > runs/browser_tasks.jsonl
# read with --data.input_key prompt --data.label_key task (OpenRLHF's default input key is "input").
# The prompt stays raw (no --data.apply_chat_template): the agent renders the first turn, with the
# tools and the start page, in the policy's own chat template.
#
# The agent runs inside OpenRLHF's vLLM engine actors (Ray workers), which do not see this shell's
# variables on a cluster started elsewhere. So its settings are written into a configured agent file,
# which every engine actor loads by path (the path must exist on every rollout host, like the checkout).
set -euo pipefail
CUA_REWARD_URL=${CUA_REWARD_URL:-http://127.0.0.1:8012}
CUA_POLICY_MAX_SIDE=${CUA_POLICY_MAX_SIDE:-448}
CUA_OPENRLHF_REWARD=${CUA_OPENRLHF_REWARD:-combined} CUA_OPENRLHF_ON_FAILURE=${CUA_OPENRLHF_ON_FAILURE:-mean}
AGENT=${AGENT:-runs/openrlhf_agent.py}
mkdir -p "$(dirname "$AGENT")"
cat > "$AGENT" <<PY
# Written by recipes/openrlhf_browser.sh: the browser agent with its settings fixed for every engine actor.
from browser_env.openrlhf_agent import configured
AgentExecutor = configured(reward_url="$CUA_REWARD_URL", policy_max_side=$CUA_POLICY_MAX_SIDE,
                           reward="$CUA_OPENRLHF_REWARD", on_failure="$CUA_OPENRLHF_ON_FAILURE")
PY
python -m openrlhf.cli.train_ppo_ray \
  --train.agent_func_path "$AGENT" \
  --data.input_key prompt --data.label_key task \
  "$@"
