"""Stopping a scoring run on SIGINT or SIGTERM: drain, write, say so, exit 130 / 143.

Why: Ctrl-C printed two KeyboardInterrupt tracebacks, and SIGTERM (a scheduler's preemption, a
`timeout`, `kill`) stopped `score-dataset` where it stood, losing the rollouts in flight and
skipping the export. Now the first signal stops new work: rollouts in flight finish and are
written (for at most `DRAIN_S`), the results are exported and the summary printed, and the exit
status says which signal stopped the run (128 + its number), so a resume is the same command.
A second signal abandons the rollouts still in flight at once (they are retried on the rerun:
nothing written is lost). No traceback either way.
"""
from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")
#: How long rollouts in flight may take to finish after the first signal.
DRAIN_S = 30.0
SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class Stopped:
    """What stopped the run: the signals received, in order (empty: it ran to the end)."""

    signals: list[int] = field(default_factory=list)
    abandoned: bool = False  # in-flight work was cancelled (a second signal, or the drain ran out)

    @property
    def exit_status(self) -> int | None:
        return 128 + self.signals[0] if self.signals else None

    def describe(self) -> str:
        name = signal.Signals(self.signals[0]).name
        how = "rollouts in flight were abandoned" if self.abandoned else "rollouts in flight were finished"
        return f"stopped by {name}: no rollout was started after it and {how}; run the same command to resume"


def run_stoppable(make: Callable[[asyncio.Event], Awaitable[T]], *,
                  drain_s: float = DRAIN_S) -> tuple[T | None, Stopped]:
    """`asyncio.run(make(stop))` where SIGINT/SIGTERM set `stop` (the first) or cancel the run (the
    second, or the drain's end); (None, ...) when the run was cancelled."""
    stopped = Stopped()

    async def runner() -> T | None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        main = asyncio.current_task()
        assert main is not None

        def on_signal(signum: int) -> None:
            stopped.signals.append(signum)
            if len(stopped.signals) == 1:
                print(f"\n{signal.Signals(signum).name}: finishing the rollouts in flight (at most {drain_s:g} s; "
                      "send it again to abandon them)", file=sys.stderr, flush=True)
                stop.set()
                loop.call_later(drain_s, abandon)
            else:
                abandon()

        def abandon() -> None:
            if not main.done():
                stopped.abandoned = True
                main.cancel()

        installed = []
        for sig in SIGNALS:
            try:
                loop.add_signal_handler(sig, on_signal, sig)
                installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
                pass
        try:
            return await make(stop)
        except asyncio.CancelledError:
            if stopped.abandoned:
                return None
            raise
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    return asyncio.run(runner()), stopped
