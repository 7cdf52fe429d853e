#!/usr/bin/env bash
# Regenerate the locks from their inputs with `uv pip compile` (uv is in the dev extra).
#
#   bash locks/refresh.sh                 re-resolve, keeping every pin that still fits its inputs
#   bash locks/refresh.sh --upgrade       resolve every package afresh to its newest release
#   bash locks/refresh.sh --lowest        the dev lock at the declared floors (--resolution lowest-direct)
#   bash locks/refresh.sh --out DIR       write to DIR instead of locks/ (run_all.sh --latest, --lowest)
#   bash locks/refresh.sh [NAME...]       only these locks: dev judge-cpu judge-gpu verl openrlhf
#
# Every lock is for CPython 3.11 on x86_64 Linux (glibc 2.28), the platform CI and the GPU nodes run.
# The CPU torch build comes from pip's own find-links when set (PIP_FIND_LINKS, as on CI) or from
# CUA_TORCH_INDEX (default: PyTorch's public CPU index). A lock changes only through this script,
# committed with a green suite (docs/environments.md).
set -euo pipefail
cd "$(dirname "$0")/.."

out=locks upgrade=() resolution=() names=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --upgrade) upgrade=(--upgrade) ;;
    --lowest) resolution=(--resolution lowest-direct) ;;
    --out) out="$2"; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "unknown argument: $1" >&2; exit 2 ;;
    *) names+=("$1") ;;
  esac
  shift
done
if [[ ${#resolution[@]} -gt 0 && ${#names[@]} -eq 0 ]]; then names=(dev); fi
if [[ ${#names[@]} -eq 0 ]]; then names=(dev judge-cpu judge-gpu verl openrlhf); fi

uv=$(command -v .venv/bin/uv || command -v uv || true)
if [[ -z "$uv" ]]; then echo "error: uv is not installed: pip install uv (it is in the dev extra)" >&2; exit 2; fi
mkdir -p "$out"
if [[ -n "${PIP_FIND_LINKS:-}" ]]; then
  torch_source=(--find-links "$PIP_FIND_LINKS")
else
  torch_source=(--extra-index-url "${CUA_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}" --index-strategy unsafe-best-match)
fi

compile() {  # NAME SOURCES... [-- UV FLAGS...]
  local name=$1; shift
  local target="$out/$name.txt"
  # a fresh resolution must not read an old lock's pins as preferences
  if [[ "$out" != locks && ${#upgrade[@]} -eq 0 && ${#resolution[@]} -eq 0 && -f "locks/$name.txt" ]]; then
    cp "locks/$name.txt" "$target"
  fi
  echo "resolving $target" >&2
  "$uv" pip compile --quiet --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
    --custom-compile-command "bash locks/refresh.sh" --no-annotate \
    "${upgrade[@]}" "${resolution[@]}" -o "$target" "$@"
}

for name in "${names[@]}"; do
  case "$name" in
    dev) compile dev pyproject.toml locks/torch.in --all-extras "${torch_source[@]}" ;;
    judge-cpu) compile judge-cpu locks/judge-cpu.in --override locks/judge-cpu-overrides.txt "${torch_source[@]}" ;;
    judge-gpu) compile judge-gpu locks/judge-gpu.in ;;
    verl) compile verl pyproject.toml locks/verl.in --extra browser "${torch_source[@]}" ;;
    openrlhf) compile openrlhf pyproject.toml locks/openrlhf.in --extra browser \
                --override locks/openrlhf-overrides.txt "${torch_source[@]}" ;;
    *) echo "unknown lock: $name (dev judge-cpu judge-gpu verl openrlhf)" >&2; exit 2 ;;
  esac
done
