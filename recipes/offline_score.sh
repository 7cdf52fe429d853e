#!/usr/bin/env bash
# Offline scoring of a rollout dataset with the Universal Verifier, resumable.
#
#   recipes/offline_score.sh SOURCE OUT [extra score-dataset flags]
#
# SOURCE: a folder of trajectories, a local .parquet/.json/.jsonl file, or a hub dataset name.
# OUT:    results.parquet or results.jsonl. The durable log is OUT itself for .jsonl, or
#         OUT.records.jsonl for .parquet; re-running the same command after a crash or Ctrl-C skips
#         the rollouts already scored and retries the unscored ones.
# Judge:  CUA_JUDGE_URL (comma-separated for several replicas), CUA_JUDGE_MODEL, CUA_JUDGE_API_KEY;
#         optional CUA_VERIFIER_CONFIG=settings.json (see reward/README.md).
#
# Examples:
#   CUA_JUDGE_URL=http://judge:8010/v1 CUA_JUDGE_MODEL=judge \
#     recipes/offline_score.sh examples/trajectories results/examples.jsonl
#   recipes/offline_score.sh microsoft/CUAVerifierBench results/cuavb.parquet \
#     --name trajectories --split fara7b_om2w_browserbase --streaming --concurrency 16
#   # then look at the numbers:
#   python -c "import pandas as pd; print(pd.read_parquet('results/cuavb.parquet').describe())"
set -euo pipefail

if [[ $# -lt 2 ]]; then
  sed -n '2,20p' "$0"
  exit 2
fi
SOURCE=$1
OUT=$2
shift 2
: "${CUA_JUDGE_URL:?set CUA_JUDGE_URL to the judge OpenAI-compatible base URL}"
: "${CUA_JUDGE_MODEL:?set CUA_JUDGE_MODEL to the served judge model name}"
mkdir -p "$(dirname "$OUT")"

CLI=(cua-verifier)
command -v cua-verifier >/dev/null 2>&1 || CLI=(python -c "import sys; from cua_verifier.cli import main; sys.exit(main())")
exec "${CLI[@]}" score-dataset "$SOURCE" --out "$OUT" --concurrency "${CONCURRENCY:-8}" "$@"
