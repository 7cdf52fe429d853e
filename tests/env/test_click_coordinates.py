"""click(x, y) in the policy's frame lands on the viewport point it pointed at, in real Chromium.

The policy sees a thumbnail (`policy_max_side`); its coordinates are the thumbnail's pixels. Before
the fix they went to Chromium unscaled and landed 2.1-2.9 times nearer the origin (issue 35 §1).
Each case finds the target in the very image the tool returned, as a grounded policy would, and
clicks there. The recording keeps the policy's numbers in the step's arguments and the viewport
point in `step.screen`, which is what the judge is shown.
"""
from __future__ import annotations

import pytest
from PIL import Image

from verifier.config import VerifierConfig
from verifier.rendering import render_step

pytestmark = pytest.mark.browser

TARGET = 24  # px, in the viewport
PAGE = """<html><body style="margin:0;background:#fff">
<div id="target" style="position:absolute;left:{left}px;top:{top}px;width:{s}px;height:{s}px;background:#f00"></div>
<script>window.hits = 0; window.clicks = [];
document.addEventListener('click', e => {{ window.clicks.push([e.clientX, e.clientY]);
  if (e.target.id === 'target') window.hits++; }});</script></body></html>"""


def target_page(env, width: int, height: int) -> tuple[int, int]:
    """Puts the red target at 70% / 75% of the viewport; returns its centre (viewport pixels)."""
    cx, cy = round(0.7 * width), round(0.75 * height)
    env._page.set_content(PAGE.format(left=cx - TARGET // 2, top=cy - TARGET // 2, s=TARGET))
    return cx, cy


def red_centre(image: Image.Image) -> tuple[int, int]:
    """Where a policy would point: the centre of the red pixels of the image it was shown."""
    rgb = image.convert("RGB")
    red = [(x, y) for y in range(rgb.height) for x in range(rgb.width)
           if (p := rgb.getpixel((x, y)))[0] > 200 and p[1] < 80 and p[2] < 80]
    assert red, "the target is not in the policy's image"
    return round(sum(x for x, _ in red) / len(red)), round(sum(y for _, y in red) / len(red))


def shown_image(result: list) -> Image.Image:
    return next(p["image"] for p in result if p["type"] == "image")


@pytest.mark.parametrize("viewport", [(960, 600), (1280, 800)], ids=lambda v: f"{v[0]}x{v[1]}")
@pytest.mark.parametrize("side", [448, 320, 640])
def test_a_click_on_the_thumbnail_hits_the_target(make_env, viewport, side):
    width, height = viewport
    with make_env(viewport_width=width, viewport_height=height, policy_max_side=side) as env:
        env.reset(task_id="shop-add-usb-hub")
        cx, cy = target_page(env, width, height)
        shot = shown_image(env.scroll("up"))  # a fresh observation of the target page (nothing to scroll)
        assert max(shot.size) == side
        px, py = red_centre(shot)
        env.click(x=px, y=py)
        landed = env._page.evaluate("window.clicks")
        assert env._page.evaluate("window.hits") == 1, f"pointed at {(px, py)} of {shot.size}, landed at {landed}"
        step = env.recorded_trajectory.steps[-1]
        assert step.error is None and step.arguments == {"x": px, "y": py}  # the policy's own numbers
        assert step.screen is not None
        assert (step.screen.agent_size, step.screen.screen_size) == (shot.size, (width, height))
        vx, vy = step.screen.arguments["x"], step.screen.arguments["y"]
        assert landed == [[vx, vy]] and abs(vx - cx) < TARGET / 2 and abs(vy - cy) < TARGET / 2
        line = render_step(step, VerifierConfig())  # the judge reads the viewport point
        assert f'"x": {vx}, "y": {vy}' in line and f'"x": {px},' not in line


def test_a_point_outside_the_thumbnail_is_a_step_error_and_the_frame_is_known_before_any_image(make_env):
    """With `initial_screenshot=False` the policy has been given no image yet: its frame is the
    thumbnail it would have got, and a point outside it is refused, not clicked."""
    with make_env(viewport_width=960, viewport_height=600, policy_max_side=448, initial_screenshot=False) as env:
        env.reset(task_id="shop-add-usb-hub")
        cx, cy = target_page(env, 960, 600)
        result = env.click(x=cx, y=cy)  # viewport pixels: outside the 448x280 frame
        assert "outside the screenshot you were shown, which is 448x280" in result[-1]["text"]
        assert env._page.evaluate("window.clicks") == []
        assert env.recorded_trajectory.steps[-1].error and env.recorded_trajectory.steps[-1].screen is None
        env.click(x=cx * 448 // 960, y=cy * 280 // 600)
        assert env._page.evaluate("window.hits") == 1


def test_the_verl_and_openrlhf_episode_runner_clicks_in_the_thumbnail_frame_too(browser_ok):
    """`ThreadedEpisode` (what the verl and OpenRLHF agents drive) gets the same scaling: its tool
    schema and its thumbnails are the policy's frame."""
    import asyncio
    import concurrent.futures

    from browser_env.episode_runner import TOOL_SCHEMAS, ThreadedEpisode

    click = next(t["function"] for t in TOOL_SCHEMAS if t["function"]["name"] == "click")
    assert "image's own pixels" in click["description"]

    async def episode() -> tuple[int, tuple[int, int]]:
        ep = ThreadedEpisode({"viewport_width": 1280, "viewport_height": 800}, policy_max_side=448)
        try:
            await ep.reset("shop-add-usb-hub")
            await ep._call(target_page, ep.env, 1280, 800)
            images, _ = await ep.act("scroll", {"direction": "up"})
            px, py = red_centre(images[0])
            await ep.act("click", {"x": px, "y": py})
            return await ep._call(lambda: ep.env._page.evaluate("window.hits")), images[0].size
        finally:
            await ep.close()

    # on a thread of its own: a sync Playwright fixture earlier in the session leaves this thread
    # with a running loop, and asyncio.run refuses to start a second one there
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        hits, size = pool.submit(asyncio.run, episode()).result()
    assert size == (448, 280) and hits == 1
