"""The allocator settings that let the service give memory back after a load.

The cause, measured: glibc serves large blocks (over 128 KiB) with mmap and returns them on free,
but after the first such block is freed it raises that threshold to the block's size (up to 32 MiB
on 64-bit). From then on the 1-2 MB base64 strings and image bytes of every request come from the
heap arenas (one per thread that allocates: the parse and judge worker threads), and a heap only
shrinks from its top, so a few live blocks keep hundreds of freed megabytes resident. RSS grew to
the high-water mark of the load and stayed there.

`tune_allocator` fixes the threshold (which also turns the dynamic raise off) and caps the arena
count; `trim` hands freed heap pages back (``malloc_trim``, which also releases whole free pages in
the middle of a heap, not only its top), run when the service goes idle. On a libc other than glibc
both are no-ops.

Why 4 MiB and not lower: every mapped block is fresh memory, paid for with a page fault per 4 KiB
on first touch. At 256 KiB each screenshot-sized buffer (the text, its decoded bytes, each request
body piece) was mapped and faulted in anew: a copy of a 1.5 MB data URL cost 1.0 ms instead of
0.25 ms, and that was ~15% of the service's CPU per verification at M = 50 (0.427 -> 0.369 s with
the screenshots' buffers on the heap, `recipes/benchmark_service.py --real -m 50`). Those buffers
now come from the heap and are reused while a load lasts; whole request bodies (17-41 MB) are
still mapped and returned on free, and the idle `trim` gives the heap's free pages back.
"""
from __future__ import annotations

import logging

from verifier.heap import bound_heap, glibc, trim

__all__ = ["ARENA_MAX", "MMAP_THRESHOLD", "trim", "tune_allocator"]

log = logging.getLogger(__name__)

#: Blocks at least this large are mmapped (and unmapped on free): request bodies, not screenshots.
MMAP_THRESHOLD = 4 * 1024 * 1024
#: Arenas: more only help programs that allocate from many threads at once, which this one does not.
ARENA_MAX = 2


def tune_allocator(*, mmap_threshold: int = MMAP_THRESHOLD, arena_max: int = ARENA_MAX) -> bool:
    """Set glibc's mmap threshold, arena cap and trim threshold for this process (`verifier.heap`);
    True when they took effect. Call it before worker threads start."""
    ok = bound_heap(mmap_threshold=mmap_threshold, arenas=arena_max, trim_threshold=4 * mmap_threshold)
    if not ok and glibc() is not None:
        log.warning("mallopt refused the service's allocator settings; memory may stay high after loads")
    return ok
