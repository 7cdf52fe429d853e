#!/usr/bin/env bash
# Install Debian's Chromium for the browser environment (idempotent). Playwright's own browser
# download is not used: the environment launches this binary through `executable_path`.
# Needs root (or sudo) when Chromium is missing; does nothing when `chromium` is already on PATH.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
  echo "chromium is missing and this is not root: run 'apt-get install -y chromium' as root" >&2
  exit 1
fi
$SUDO apt-get update -q
# the version the suite was last green with (locks/browser.txt), while Debian's archive has it
lock="$(dirname "$0")/../locks/browser.txt"
want=$(grep -E '^chromium=' "$lock" 2>/dev/null | cut -d= -f2- || true)
spec=chromium
if [ -n "$want" ]; then
  if apt-cache madison chromium | grep -qF " $want "; then spec="chromium=$want"; else
    echo "warning: Debian no longer has chromium $want (locks/browser.txt); installing $(apt-cache policy chromium | sed -n 's/ *Candidate: //p')" >&2
  fi
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "$spec" fonts-dejavu-core
command -v chromium
