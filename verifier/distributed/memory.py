"""What bounds a Ray actor's memory: its image cache's default size and how its heap returns memory.

Measured on one actor verifying 40 rows of 32 inline 1440x900 captures (27.7 MB a row, 2 rows
verified at once, in one process without Ray): peak RSS 929 MB as it was. Two things held most
of it, neither of them rows in flight:

- **The judge client's image cache** (`image_cache_mb`, 256 MB by default) kept the data URLs
  of rows already finished. An offline actor's rows each bring their own screenshots, so what a
  finished row leaves there is rarely asked for again; the rows in flight need their own images
  cached across stages (a pass-through URL is the screenshot's own text, so a live row's entry
  costs nothing extra; a downscaled one is re-encoded on a miss). `ACTOR_IMAGE_CACHE_MB` holds
  two rows of 32 downscaled captures. Alone: 929 -> 723 MB, CPU unchanged within noise.
- **glibc's heap.** Rows are freed, but glibc raises its mmap threshold to the largest block
  freed (up to 32 MB), so after the first row the 0.5-30 MB blocks of the next rows (base64
  text, decoded PNGs, request bodies) come from heaps that are never returned, one heap per
  thread that allocated (the reader and hashing threads). `bound_heap` fixes the threshold at
  1 MB (blocks above it are mapped and unmapped whole) and caps the heaps at two. Alone:
  929 -> 662 MB; with the smaller cache: 418 MB.

Both are per actor process: the driver, the local loop and the reward service are not touched.
"""
from __future__ import annotations

from typing import Any

from .. import heap

#: An actor's image cache in MB when the judge configuration sets no `image_cache_mb`.
ACTOR_IMAGE_CACHE_MB = 64.0


def actor_settings(settings: Any) -> Any:
    """`settings` with the actor's image cache bound, unless the configuration chose one."""
    judge = dict(settings.judge or {})
    if "image_cache_mb" in judge:
        return settings
    judge["image_cache_mb"] = ACTOR_IMAGE_CACHE_MB
    return settings.model_copy(update={"judge": judge})


def bound_heap(mmap_threshold: int = 1 << 20, arenas: int = 2) -> bool:
    """Make glibc return large freed blocks at once and keep at most `arenas` heaps (this process,
    from now on; `verifier.heap`). False where the C library is not glibc (nothing changes there)."""
    return heap.bound_heap(mmap_threshold=mmap_threshold, arenas=arenas, who="a scoring actor")
