"""glibc's heap settings for the long-lived processes that hold screenshot-sized blocks.

Why: glibc maps blocks over 128 KiB on their own and unmaps them on free, but after the first such
block is freed it raises that threshold to the block's size (up to 32 MiB on 64-bit). From then on
the 0.5-30 MB base64 texts, decoded images and request bodies of every trajectory come from heap
arenas (one per thread that allocates), and a heap only shrinks from its top: a process that has
verified a load keeps its high-water mark resident. The reward service
(`serving.reward_service.memory`) and each Ray scoring actor (`verifier.distributed.memory`) fix
the threshold (which also turns the raise off) and cap the arenas with `bound_heap`; the service
also hands freed pages back when it goes idle (`trim`). On a C library other than glibc both are
no-ops that say so (False).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
from functools import lru_cache

log = logging.getLogger(__name__)

#: glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_MMAP_MAX, M_ARENA_MAX = -1, -3, -4, -8


@lru_cache(maxsize=1)
def glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (it has `mallopt` and `malloc_trim`), else None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        version = libc.gnu_get_libc_version  # glibc only: musl and macOS lack it
    except (OSError, AttributeError):
        return None
    version.restype = ctypes.c_char_p
    if not version() or not (hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim")):
        return None
    return libc


def bound_heap(*, mmap_threshold: int, arenas: int, trim_threshold: int | None = None,
               map_large: bool = True, who: str = "this process") -> bool:
    """Blocks of at least `mmap_threshold` bytes mapped (and unmapped on free) on their own, at most
    `arenas` heaps, and, when given, heap tops over `trim_threshold` returned on free; True when
    every setting took. `map_large=False` maps no block on its own at all (each comes from an
    arena and is reused there; glibc still maps one that no heap can hold): for a process that
    returns its free pages with `trim` when idle. For this process from now on: call it before
    worker threads start (an arena is made per thread on its first allocation). A refusal by
    glibc is logged, naming `who`."""
    libc = glibc()
    if libc is None:
        return False
    settings = [(M_MMAP_THRESHOLD, mmap_threshold), (M_ARENA_MAX, arenas)]
    if trim_threshold is not None:
        settings.append((M_TRIM_THRESHOLD, trim_threshold))
    if not map_large:
        settings.append((M_MMAP_MAX, 0))
    ok = all(bool(libc.mallopt(param, value)) for param, value in settings)
    if not ok:
        log.warning("mallopt refused the heap settings of %s: its memory may stay high after loads", who)
    return ok


def trim() -> bool:
    """Return freed heap memory to the system now; True when glibc released something."""
    libc = glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
