"""`python -m cua_verifier`: the same command line as `cua-verifier`, for environments where the
console script is not on PATH (a venv used without activating it, a notebook kernel)."""
from __future__ import annotations

import sys

from cua_verifier.cli import main

if __name__ == "__main__":
    sys.exit(main())
