"""Test-side name of the tiny random-weight Qwen2-VL builder (the code lives in `serving.tiny_model`,
because the CPU demo judge builds the same model outside the test suite).

Usage: ``python tests/engine_utils/tiny_qwen2vl.py OUT_DIR`` (same as ``python serving/tiny_model.py``).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from serving.tiny_model import BUILD_VERSION, MAX_PIXELS, VOCAB_SIZE, build_tiny_qwen2vl

__all__ = ["BUILD_VERSION", "MAX_PIXELS", "VOCAB_SIZE", "build_tiny_qwen2vl"]

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/engine_utils/tiny_qwen2vl.py OUT_DIR (always rebuilds)")
    print(build_tiny_qwen2vl(sys.argv[1], force=True))
