#!/usr/bin/env bash
# The verl and OpenRLHF test environments (.venv-verl, .venv-openrlhf), built on top of the project
# venv (.venv): each holds only the framework and what it needs beyond .venv, with versions that
# differ from .venv where the framework pins them (verl 0.9.1: transformers<5.11). Idempotent: a stamp
# per environment skips a rebuild. Neither framework's full install works on CPU (OpenRLHF pins
# flash-attn and deepspeed, which build against CUDA; verl pulls vLLM-era extras), so both are
# installed --no-deps with the packages their agent-loop and reward modules import.
set -euo pipefail
cd "$(dirname "$0")/../.."
base_site=$("${CUA_BASE_PYTHON:-.venv/bin/python}" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

build() {  # NAME STAMP PACKAGES...
  local name=$1 stamp=$2; shift 2
  if [ -f "$name/stamp" ] && [ "$(cat "$name/stamp")" = "$stamp" ]; then return 0; fi
  rm -rf "$name"
  python3 -m venv "$name"
  local site
  site=$("$name/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  # the project venv's packages after this one's own (site.addsitedir also reads its .pth files)
  echo "import site; site.addsitedir('$base_site')" > "$site/zz_project_venv.pth"
  "$name/bin/pip" install -q --no-deps "$@"
  echo "$stamp" > "$name/stamp"
}

AIOHTTP=(aiohttp==3.14.5 multidict==7.2.1 yarl==1.25.1 propcache==0.5.4 aiohappyeyeballs==2.7.1
         aiosignal==1.4.0 frozenlist==1.8.0)
build .venv-verl verl-0.9.1-a verl==0.9.1 hydra-core==1.3.8 omegaconf==2.4.0 antlr4-python3-runtime==4.9.3 \
  codetiming==1.4.0 tensordict==0.10.0 pyvers==0.2.3 torchdata==0.11.0 pylatexenc==2.11 peft==0.21.2 \
  transformers==5.10.4 tokenizers==0.22.2 huggingface_hub==1.33.0 orjson==3.13.0 cachetools==8.0.2 "${AIOHTTP[@]}"
build .venv-openrlhf openrlhf-0.11.2-a openrlhf==0.11.2 pylatexenc==2.11 "${AIOHTTP[@]}"
