"""The allocator settings that let the service give memory back after a load.

The cause, measured: glibc serves large blocks (over 128 KiB) with mmap and returns them on free,
but after the first such block is freed it raises that threshold to the block's size (up to 32 MiB
on 64-bit). From then on the 1-2 MB base64 strings and image bytes of every request come from the
heap arenas (one per thread that allocates: the parse and judge worker threads), and a heap only
shrinks from its top, so a few live blocks keep hundreds of freed megabytes resident. RSS grew to
the high-water mark of the load and stayed there.

`tune_allocator` fixes the threshold (which also turns the dynamic raise off) and caps the arena
count; `trim` hands freed heap pages back (``malloc_trim``), run when the service goes idle. On a
libc other than glibc both are no-ops.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
from functools import lru_cache

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
#: Blocks at least this large are mmapped (and unmapped on free): every screenshot-sized buffer.
MMAP_THRESHOLD = 256 * 1024
#: Arenas: more only help programs that allocate from many threads at once, which this one does not.
ARENA_MAX = 2


@lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def tune_allocator(*, mmap_threshold: int = MMAP_THRESHOLD, arena_max: int = ARENA_MAX) -> bool:
    """Set glibc's mmap threshold and arena cap for this process; True when both took effect.

    Call it before worker threads start (arenas are created per thread on first use)."""
    libc = _libc()
    if libc is None:
        return False
    ok = bool(libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(libc.mallopt(M_ARENA_MAX, arena_max))
    ok = ok and bool(libc.mallopt(M_TRIM_THRESHOLD, 4 * mmap_threshold))
    if not ok:
        log.warning("mallopt refused the service's allocator settings; memory may stay high after loads")
    return ok


def trim() -> bool:
    """Return freed heap memory to the system now; True when glibc released something."""
    libc = _libc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
