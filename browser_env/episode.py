"""Recording one episode in the native trajectory format, as it happens.

Step k gets a screenshot *before* its action (the page the policy chose the action on: the last
observation, reused rather than re-shot, since nothing happened in between) and one *after* it;
the initial page is `step=0, timing="after"`. An infrastructure failure (browser killed, page
crashed, watchdog) is an episode error: the run is marked `aborted` and the error is written on
the step it interrupted, so the trajectory says what happened.
"""
from __future__ import annotations

import time
from typing import Any

from verifier.coordinates import ScreenFrame
from verifier.trajectory import RunStatus, Screenshot, Step, Task, Trajectory


class EpisodeRecorder:
    def __init__(self, task: Task) -> None:
        self.task = task
        self.steps: list[Step] = []
        self.screenshots: list[Screenshot] = []
        self.final_answer: str | None = None
        self.status = RunStatus.finished
        self.error: str | None = None
        self.last_png: bytes | None = None

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def initial(self, png: bytes) -> None:
        self.screenshots.append(Screenshot.from_bytes(png, step=0, timing="after"))
        self.last_png = png

    def begin(self, action: str, arguments: dict[str, Any], url: str | None) -> int:
        k = len(self.steps) + 1
        self.steps.append(Step(index=k, action=action, arguments=arguments, url=url, timestamp=time.time()))
        if self.last_png is not None:
            self.screenshots.append(Screenshot.from_bytes(self.last_png, step=k, timing="before"))
        return k

    def locate(self, screen: ScreenFrame) -> None:
        """The current step's arguments in the screenshots' pixels (the policy pointed on a thumbnail)."""
        self.steps[-1] = self.steps[-1].model_copy(update={"screen": screen})

    def end(self, png: bytes | None, *, error: str | None = None) -> None:
        k = len(self.steps)
        if error is not None:
            self.steps[-1] = self.steps[-1].model_copy(update={"error": error[:500]})
        if png is not None:
            self.screenshots.append(Screenshot.from_bytes(png, step=k, timing="after"))
            self.last_png = png

    def abort(self, message: str) -> None:
        """An episode error: recorded on the current step (if any) and in the run status."""
        self.error = message
        self.status = RunStatus.aborted
        if self.steps and not self.steps[-1].error:
            self.steps[-1] = self.steps[-1].model_copy(update={"error": f"episode error: {message}"[:500]})

    def budget_exhausted(self) -> None:
        if self.status is RunStatus.finished:
            self.status = RunStatus.step_budget_exhausted

    def trajectory(self) -> Trajectory:
        return Trajectory(task=self.task, steps=list(self.steps), screenshots=list(self.screenshots),
                          final_answer=self.final_answer, status=self.status, source_format="browser_env")
