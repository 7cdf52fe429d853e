"""What bounds a Ray actor's memory (`verifier.distributed.memory`): its image cache unless the
configuration sets one, and a heap that gives freed blocks back (each in a process of its own)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from verifier.distributed.memory import ACTOR_IMAGE_CACHE_MB, actor_settings, bound_heap
from verifier.settings import RewardSettings

REPO = Path(__file__).resolve().parents[2]

#: Frees a 30 MB block (glibc then raises its mmap threshold to 30 MB), makes 200 MB of 5 MB blocks
#: each followed by a small one kept alive (so the heap's top cannot be trimmed), frees the large
#: ones, and prints the MB of RSS still held beyond the small ones' 8 MB.
_HEAP = """
import sys, psutil
from verifier.distributed.memory import bound_heap
if sys.argv[1] == "bounded" and not bound_heap():
    print("no-glibc"); sys.exit()
p = psutil.Process()
big = b"x" * (30 << 20)
del big
base = p.memory_info().rss
pairs = [(b"y" * (5 << 20), b"z" * 200_000) for _ in range(40)]
smalls = [s for _, s in pairs]
del pairs
print(((p.memory_info().rss - base) >> 20) - 8)
"""


def test_actor_image_cache_is_bounded_unless_the_configuration_says():
    judge = {"base_urls": ["http://127.0.0.1:9"], "model": "m"}
    plain = RewardSettings(judge=judge)
    assert actor_settings(plain).judge["image_cache_mb"] == ACTOR_IMAGE_CACHE_MB
    assert "image_cache_mb" not in plain.judge  # the caller's settings are not changed
    chosen = RewardSettings(judge={**judge, "image_cache_mb": 512})
    assert actor_settings(chosen).judge["image_cache_mb"] == 512


def _held_mb(mode: str) -> str:
    pytest.importorskip("psutil")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-c", _HEAP, mode], capture_output=True, text=True, check=True,
                          env=env, timeout=60).stdout.strip()


def test_bounded_heap_gives_freed_row_sized_blocks_back():
    bounded = _held_mb("bounded")
    if bounded == "no-glibc":
        assert not bound_heap()
        pytest.skip("not glibc: bound_heap changes nothing")
    assert int(bounded) < 40  # freed at once: each block was mapped on its own
    assert int(_held_mb("as-is")) > 150  # what an actor's heap did: 200 MB freed, still held
