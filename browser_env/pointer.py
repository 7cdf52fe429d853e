"""From the policy's pixels to the browser's: where a `click(x, y)` lands.

The policy points on the screenshot it was shown, which is a thumbnail when `policy_max_side` is
set (448 px by default in the recipes and the verl/OpenRLHF agents), while Chromium's mouse takes
viewport (CSS) pixels. Sent unscaled, a click on a 960x600 viewport landed 2.1 times nearer the
origin than the policy pointed (2.9 times on 1280x800), so a coordinate-grounded policy was trained
on missed clicks. `screen_frame` scales the point and says both frames, which the recording keeps
(`verifier.coordinates`: the policy's numbers in the step's arguments, the viewport's for the judge).

A point outside the image the policy was shown is refused (a step error the policy reads) rather
than clamped: it usually means the policy pointed in another frame, and a silent clamp would hide it.
"""
from __future__ import annotations

from typing import Any

from verifier.coordinates import ScreenFrame, Size, inside, to_screen


def screen_frame(x: Any, y: Any, shown: Size, viewport: Size) -> ScreenFrame:
    """The viewport point for the policy's (x, y) on an image of size `shown`.

    Raises:
        ValueError: not numbers, or outside the image shown (the policy's mistake: a step error).
    """
    try:
        px, py = float(x), float(y)
    except (TypeError, ValueError):
        raise ValueError(f"x and y must be pixel numbers of the screenshot you were shown, not {x!r}, {y!r}") from None
    if not inside(px, py, shown):
        raise ValueError(f"({x}, {y}) is outside the screenshot you were shown, which is {shown[0]}x{shown[1]} "
                         "pixels: give x and y in that image's pixels")
    vx, vy = to_screen(px, py, shown, viewport)
    return ScreenFrame(arguments={"x": vx, "y": vy}, agent_size=shown, screen_size=viewport)
