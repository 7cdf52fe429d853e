"""The allocator settings that let the service give memory back after a load.

The cause, measured: glibc serves large blocks (over 128 KiB) with mmap and returns them on free,
but after the first such block is freed it raises that threshold to the block's size (up to 32 MiB
on 64-bit). From then on the 1-2 MB base64 strings and image bytes of every request come from the
heap arenas (one per thread that allocates: the parse and judge worker threads), and a heap only
shrinks from its top, so a few live blocks keep hundreds of freed megabytes resident. RSS grew to
the high-water mark of the load and stayed there.

`tune_allocator` fixes the threshold (which also turns the dynamic raise off), caps the arena
count and maps no block on its own; `trim` hands every free heap page back (``malloc_trim`` releases
whole free pages in the middle of a heap too, not only its top), run when the service goes idle.
On a libc other than glibc both are no-ops.

Why no mapped blocks, when mapping them is what returns memory on free: a mapped block is fresh
memory, paid for with a page fault per 4 KiB on first touch, on every request. With every block
over 256 KiB mapped, a copy of a 1.5 MB data URL cost 1.0 ms instead of 0.25 ms, and at M = 50 the
service took ~30,000 page faults a second (~430,000 in a 14 s profile window): the 41 MB body of
each request alone is 10,500. From the arenas, those buffers are reused while a load lasts (34,000
faults in the same window; system time 1.0 s against 1.7-1.8 s); heap tops over `TRIM_THRESHOLD` still go back
on free, and the idle `trim` returns the rest, so RSS after a load is what it was (~360 MB after 64
M = 20 rollouts, `recipes/benchmark_service.py --real`), and the byte budget bounds the peak.
"""
from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable

from verifier.heap import bound_heap, trim

__all__ = ["ARENA_MAX", "GC_THRESHOLDS", "IDLE_RELEASE_S", "MMAP_THRESHOLD", "TRIM_THRESHOLD", "IdleRelease",
           "release", "settle_gc", "trim", "tune_allocator"]

#: The mmap threshold, fixed (so glibc never raises it); with no block mapped on its own it only
#: matters where glibc must map one anyway (a block no heap can hold).
MMAP_THRESHOLD = 4 * 1024 * 1024
#: Heap tops over this are returned on free during a load; the idle `trim` returns the rest.
TRIM_THRESHOLD = 256 * 1024 * 1024
#: Arenas: more only help programs that allocate from many threads at once, which this one does not.
ARENA_MAX = 2


def tune_allocator(*, mmap_threshold: int = MMAP_THRESHOLD, arena_max: int = ARENA_MAX) -> bool:
    """Set glibc's mmap threshold, arena cap and trim threshold, and map no block on its own, for
    this process (`verifier.heap`); True when they took effect. Call it before worker threads start."""
    return bound_heap(mmap_threshold=mmap_threshold, arenas=arena_max, trim_threshold=TRIM_THRESHOLD,
                      map_large=False, who="the reward service")


#: The cyclic collector's generation thresholds while serving (CPython's default: 700, 10, 10).
#: Measured at M = 50 (`recipes/benchmark_service.py --real`, 32 rollouts): with the defaults the
#: collector took ~18 ms per verification (6-7% of the service's CPU), a third of it in full
#: collections that walked the ~130,000 objects the imports and the app built at startup, again
#: and again. With those frozen (`settle_gc`) and a young generation of 7,000, ~6 ms.
GC_THRESHOLDS = (7000, 10, 10)


def settle_gc(thresholds: tuple[int, int, int] = GC_THRESHOLDS) -> None:
    """Collect once, move every object alive now (modules, the app, its settings) out of the
    collector's sight (``gc.freeze``), and set `thresholds`. Call it once the service is built,
    right before it serves: what a request allocates is still collected as before, only less often
    in the young generation, so garbage cycles may live a little longer during a load; `release`
    collects them when the service goes idle."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*thresholds)


#: Seconds a process stays idle (no verification or request in flight) before its release runs.
IDLE_RELEASE_S = 1.0


def release() -> bool:
    """When the service goes idle: collect the garbage cycles a load left, then hand every free
    heap page back (`trim`); True when glibc released something."""
    gc.collect()
    return trim()


class IdleRelease:
    """Runs `action` (default `release`, in a worker thread) once a process has had no work for
    `delay_s`: `ended()` is called when a piece of work ends, `busy()` says how much is left.

    Why wait instead of releasing when the last piece ends: a client that sends one rollout at a
    time empties the service after each, and a release per verification would cost each one a
    collection, a trim and the page faults of touching that memory again. Used by the service
    (`core`, its admission queue) and by the gate in Ray Serve's proxy (requests in flight), which
    holds every body it reads and would otherwise keep a load's high-water mark."""

    def __init__(self, busy: Callable[[], int], *, delay_s: float = IDLE_RELEASE_S,
                 action: Callable[[], object] | None = None) -> None:
        self.busy, self.delay_s = busy, delay_s
        self.action = action if action is not None else release
        self._since = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._running = False

    def ended(self) -> None:
        """A piece of work ended (on the event loop): when none is left, start the idle clock."""
        if self.busy() == 0:
            self._since = time.monotonic()
            if self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(self.delay_s, self._fire)

    def _fire(self) -> None:
        self._timer = None
        if self.busy() or self._running:
            return  # busy again (its end restarts the clock), or a release is running
        loop, left = asyncio.get_running_loop(), self._since + self.delay_s - time.monotonic()
        if left > 0.001:  # work came and went since the clock started: wait out the rest
            self._timer = loop.call_later(left, self._fire)
            return
        try:
            fut = loop.run_in_executor(None, self.action)
        except RuntimeError:  # the loop is closing (its executor shut down): nothing to give back to
            return
        self._running = True
        fut.add_done_callback(lambda _f: setattr(self, "_running", False))
