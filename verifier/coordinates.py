"""Pointer coordinates in two frames: the image an agent pointed on, and the recorded screenshots.

Why two: a policy in training is often shown a thumbnail of the page (browser_env shows a 448 px
one of a 960x600 viewport: image tokens grow with the area), so its `click(x, y)` is in the
thumbnail's pixels, while the recording keeps the full-size screenshots for the judge. Both
numbers matter and neither may replace the other: `Step.arguments` keep the agent's own numbers
(what the policy emitted, what training credits), and `Step.screen` carries the same arguments in
the screenshots' pixels, which is what the judge is shown beside those screenshots (a judge told
"click (336, 219)" on a 960x600 screenshot would look at the wrong place).
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

Size = tuple[int, int]


class ScreenFrame(BaseModel):
    """A step's arguments moved into the recorded screenshots' pixels, and both frames' sizes."""

    model_config = ConfigDict(extra="forbid")

    arguments: dict[str, Any] = Field(description=(
        "the step's arguments with every coordinate in the recorded screenshots' pixels (the judge reads these)"))
    agent_size: Size = Field(description="(width, height) of the image the agent's own coordinates refer to")
    screen_size: Size = Field(description="(width, height) of the recorded screenshots (the browser viewport)")


def to_screen(x: float, y: float, agent_size: Size, screen_size: Size) -> tuple[int, int]:
    """The screenshot pixel under the agent's pixel (x, y): the centre of the agent's pixel is
    scaled (each axis by its own ratio, since a thumbnail's sides are rounded separately), so
    equal frames map every pixel to itself."""
    (aw, ah), (sw, sh) = agent_size, screen_size
    return int((x + 0.5) * sw / aw), int((y + 0.5) * sh / ah)


def inside(x: float, y: float, size: Size) -> bool:
    return 0 <= x < size[0] and 0 <= y < size[1]


def shown_arguments(arguments: dict[str, Any], screen: ScreenFrame | None) -> dict[str, Any]:
    """The arguments a judge (or a person looking at the screenshots) should read."""
    return screen.arguments if screen is not None else arguments
