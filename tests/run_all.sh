#!/usr/bin/env bash
# The whole test suite from a fresh clone: dev environment, CPU judge environment (for the
# real-vLLM end-to-end tier), verl and OpenRLHF environments, then pytest. Every environment is
# installed from its lock (locks/*.txt), so a fresh machine gets what the last green run had.
# Idempotent: re-running reuses each environment while its lock is unchanged.
#   --no-engine  skip the judge environment and the end-to-end tier
#   --fast       the fast tier only (no engine, no browser, nothing marked slow: under 2 minutes)
#   --latest     resolve every lock afresh to the newest releases (into .locks/latest, not locks/),
#                print the pins that changed, then run the whole suite on them
#   --lowest     resolve the dev environment at the declared floors (.locks/lowest) and run the fast
#                tier on it: the check that each floor in pyproject.toml is true
# After --latest or --lowest, the next plain run reinstalls the environments from locks/.
set -euo pipefail
cd "$(dirname "$0")/.."

engine=1
fast=0
latest=0
lowest=0
args=()
for arg in "$@"; do
  case "$arg" in
    --no-engine) engine=0; args+=("$arg") ;;
    --fast) fast=1; engine=0 ;;   # the fast tier: no engine, no browser, nothing marked slow
    --latest) latest=1 ;;
    --lowest) lowest=1; fast=1; engine=0 ;;
    *) args+=("$arg") ;;
  esac
done
# The fast tier runs on two workers (pytest-xdist, dev extra): its tests are isolated (own ports,
# tmp dirs), and on two cores it takes ~100 s instead of ~150 s. The full suite stays serial: its
# engine, browser and Ray tiers share one server or cluster per session.
if [ "$fast" = 1 ]; then args=(--no-engine -m "not slow and not browser" -n 2 --dist loadfile "${args[@]}"); fi

# The dev environment from its lock. --latest and --lowest resolve new locks first (uv, from the
# locked dev environment), and the environments below are then built from those.
source locks/install.sh
install_locked .venv locks/dev.txt .
export CUA_LOCK_DIR=locks
if [ "$latest" = 1 ]; then
  bash locks/refresh.sh --upgrade --out .locks/latest
  .venv/bin/python locks/changes.py locks .locks/latest
  export CUA_LOCK_DIR=.locks/latest
elif [ "$lowest" = 1 ]; then
  bash locks/refresh.sh --lowest --out .locks/lowest
  .venv/bin/python locks/changes.py locks .locks/lowest
  export CUA_LOCK_DIR=.locks/lowest
fi
install_locked .venv "$CUA_LOCK_DIR/dev.txt" .
# Debian's Chromium for the browser tier (tests/env); a no-op when it is already installed. Without
# it (not root) the tier skips locally and fails under CI=true.
bash browser_env/setup_chromium.sh || echo "warning: no Chromium: the browser tier (tests/env) cannot run" >&2
export CUA_REQUIRE_BROWSER="${CUA_REQUIRE_BROWSER:-1}"   # the browser tier fails rather than skips here
# verl and OpenRLHF test environments (tests/frameworks), each on top of .venv: about 2-3 min once, then cached
if [ "$fast" = 0 ]; then bash tests/frameworks/setup_envs.sh; fi

if [ "$engine" = 1 ]; then
  .venv/bin/cua-verifier setup-judge-env --variant cpu
  export CUA_REQUIRE_ENGINE="${CUA_REQUIRE_ENGINE:-1}"
fi
exec .venv/bin/python -m pytest "${args[@]}"
