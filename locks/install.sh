# Sourced by tests/run_all.sh, tests/frameworks/setup_envs.sh and serving/setup_judge_env.sh: build
# one virtual environment from one lock, so that every machine gets exactly the versions of the last
# green run. Each environment is its own: nothing is borrowed from another one's site-packages.
#
#   install_locked VENV LOCK [PROJECT_DIR]
#
# 1. the lock's torch (a CPU build: PyTorch's CPU index, not PyPI) from pip's own sources, else from
#    CUA_TORCH_INDEX (default: PyTorch's public CPU index); if neither has it, one line naming the
#    variable and exit status 3;
# 2. every other pin of the lock, without resolving anything (--no-deps: a lock is complete);
# 3. PROJECT_DIR, when given, editable and without dependencies (they are in the lock);
# then a stamp (the lock's and pyproject.toml's hashes) lets the next call return at once.
# The pip version is pinned here too (CUA_PIP_PIN), since it is what reads the lock.

CUA_TORCH_INDEX="${CUA_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
CUA_PIP_PIN="${CUA_PIP_PIN:-pip==26.3}"

lock_stamp() {  # LOCK [PROJECT_DIR]
  { cat "$1"; [ -z "${2:-}" ] || cat "$2/pyproject.toml"; echo "$CUA_PIP_PIN"; } | sha256sum | cut -d' ' -f1
}

install_torch_pin() {  # PYTHON LOCK: the lock's torch line, first from pip's sources, then the CPU index
  local py=$1 pin
  pin=$(grep -E '^torch==' "$2" || true)
  [ -n "$pin" ] || return 0
  "$py" -m pip install -q --no-deps "$pin" >/dev/null 2>&1 && return 0
  if ! "$py" -m pip install -q --no-deps --index-url "$CUA_TORCH_INDEX" "$pin" >/dev/null 2>&1; then
    echo "error: cannot install $pin: it is on PyTorch's CPU index, not PyPI; set CUA_TORCH_INDEX to an index that has it (tried: $CUA_TORCH_INDEX)" >&2
    return 3
  fi
}

install_locked() {  # VENV LOCK [PROJECT_DIR]; CUA_VENV_PYTHON: the interpreter (default python3)
  local venv=$1 lock=$2 project=${3:-} stamp want py extra
  stamp="$venv/.cua-lock-stamp"
  want=$(lock_stamp "$lock" "$project")
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  echo "installing $venv from $lock"
  # an environment built before the locks (or by hand) starts again from nothing: what it holds,
  # .pth files included, is not known
  [ -f "$stamp" ] || rm -rf "$venv"
  [ -x "$venv/bin/python" ] || "${CUA_VENV_PYTHON:-python3}" -m venv "$venv" || return
  py="$venv/bin/python"
  "$py" -m pip install -q "$CUA_PIP_PIN" || return
  install_torch_pin "$py" "$lock" || return
  # pins the lock no longer has are removed, so an environment equals its lock, not lock + history
  extra=$(comm -23 <("$py" -m pip freeze --exclude-editable | sed 's/[=@ ].*//' | tr 'A-Z_.' 'a-z--' | sort -u) \
                   <(grep -E '^[A-Za-z0-9]' "$lock" | sed 's/[=<>; ].*//' | tr 'A-Z_.' 'a-z--' | sort -u))
  if [ -n "$extra" ]; then "$py" -m pip uninstall -q -y $extra || return; fi
  "$py" -m pip install -q --no-deps -r "$lock" || return
  if [ -n "$project" ]; then
    # the dev lock has the build backend (hatchling); the framework locks do not, so pip builds it
    "$py" -m pip install -q --no-deps --no-build-isolation -e "$project" 2>/dev/null \
      || "$py" -m pip install -q --no-deps -e "$project" || return
  fi
  echo "$want" > "$stamp"
}
