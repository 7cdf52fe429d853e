#!/usr/bin/env bash
# The verl and OpenRLHF test environments (.venv-verl, .venv-openrlhf), each installed from its own
# lock (locks/verl.txt, locks/openrlhf.txt; CUA_LOCK_DIR picks another folder) with the project
# installed into it: no environment reads another's site-packages (no cross-env .pth, no PYTHONPATH).
# Each holds the framework with its declared dependencies, except OpenRLHF's two CUDA-only builds
# (flash-attn, deepspeed: locks/openrlhf-overrides.txt), and the CPU torch. verl 0.9.1 pins
# transformers<5.11 and OpenRLHF 0.11.2 transformers==5.15.0, which is why neither can share .venv.
# Idempotent: a stamp per environment skips a rebuild while its lock and pyproject.toml are unchanged.
set -euo pipefail
cd "$(dirname "$0")/../.."
source locks/install.sh
locks="${CUA_LOCK_DIR:-locks}"
install_locked .venv-verl "$locks/verl.txt" .
install_locked .venv-openrlhf "$locks/openrlhf.txt" .
