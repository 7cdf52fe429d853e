"""BrowserEnv on real Chromium: recording, every tool, state reset, sold-out and critical-point
sites, bounds (timeouts, step budget), and a killed browser as an episode error, not a hang."""
from __future__ import annotations

import time

import pytest
from PIL import Image

from browser_env import BrowserEnv, close_all
from verifier.errors import TrajectoryError
from verifier.loaders import load_trajectory
from verifier.trajectory import RunStatus

pytestmark = pytest.mark.browser


def image_of(result):
    parts = {p["type"]: p for p in result}
    assert isinstance(parts["image"]["image"], Image.Image)
    return parts["image"]["image"], parts["text"]["text"]


def element(env: BrowserEnv, label: str) -> int:
    return next(e["id"] for e in env._elements if e["label"] == label)


def test_episode_recording_round_trips_through_the_loaders(env, tmp_path):
    start, first = image_of(env.reset(task_id="shop-cheapest-wireless-mouse"))  # the policy sees the start page
    assert start.size == (480, 320) and "URL: http" in first and '[3] input "Search"' in first
    img, text = image_of(env.type("wireless mouse", element=3, submit=True))
    assert img.size == (480, 320) and "3 products" not in text and "Wireless Travel Mouse" in text
    image_of(env.click(element=element(env, "Wireless Travel Mouse")))
    assert env.answer("Wireless Travel Mouse, $12.49").startswith("Answer recorded")
    traj = env.trajectory
    assert [s.action for s in traj.steps] == ["type", "click", "answer"]
    assert [(s.step, s.timing) for s in traj.screenshots] == [
        (0, "after"), (1, "before"), (1, "after"), (2, "before"), (2, "after"), (3, "before"), (3, "after")]
    assert traj.screenshots[1].sha256 == traj.screenshots[0].sha256  # before step 1 = what the policy saw
    assert traj.screenshots[2].sha256 != traj.screenshots[1].sha256  # the search changed the page
    assert traj.steps[1].url.endswith("sort=") and traj.final_answer == "Wireless Travel Mouse, $12.49"
    path = tmp_path / "episode.json"
    path.write_text(traj.to_json())
    loaded = load_trajectory(path)
    assert loaded.task == traj.task and [s.action for s in loaded.steps] == ["type", "click", "answer"]
    assert [s.sha256 for s in loaded.screenshots] == [s.sha256 for s in traj.screenshots]
    assert loaded.load_warnings == []


def test_each_tool(env):
    env.reset(task_id="shop-add-usb-hub")
    _, text = image_of(env.goto("/library/"))
    assert "City Library" in text
    _, text = image_of(env.goto("https://example.com/"))  # off-site: refused, recorded as a step error
    assert "only the task sites" in text and env.recorded_trajectory.steps[-1].error
    env.goto("/shop/")
    link = next(e for e in env._elements if e["label"] == "Cart (0)")
    _, text = image_of(env.click(x=link["x"], y=link["y"]))  # by coordinates
    assert "/shop/cart" in text
    _, text = image_of(env.goto("/shop/item/h1"))
    _, text = image_of(env.click(element=element(env, "Add to cart")))  # by element
    assert "Cart (1)" in text and env.site_state["cart"] == {"h1": 1}
    _, text = image_of(env.go_back())
    assert "/shop/item/h1" in text
    env.goto("/shop/")
    before = env._page.evaluate("window.scrollY")
    env.scroll("down")
    assert env._page.evaluate("window.scrollY") > before
    _, text = image_of(env.click(element=999))
    assert "no element [999]" in text
    assert env.answer("Added.").startswith("Answer recorded") and env.done
    n = len(env.recorded_trajectory.steps)
    assert "episode is over" in env.scroll("down")[0]["text"]  # after the answer: nothing recorded
    assert len(env.recorded_trajectory.steps) == n


def test_site_state_resets_per_episode(env):
    env.reset(task_id="shop-add-usb-hub")
    env.goto("/shop/item/h1")
    env.click(element=element(env, "Add to cart"))
    assert env.site_state["cart"] == {"h1": 1}
    _, text = image_of(env.reset(task_id="shop-add-usb-hub"))
    assert env.site_state["cart"] == {} and '"Cart (0)"' in text
    assert env.recorded_trajectory.steps == []


def test_sold_out_and_critical_point(env):
    env.reset(task_id="tickets-jazz-sold-out")
    _, text = image_of(env.click(element=element(env, "Jazz Night")))
    assert "Buy tickets" not in text
    assert env.site_state["orders"] == []
    env.reset(task_id="form-prepare-passport")
    draft = env.task.facts["draft"]
    for label, value in (("Full name", draft["name"]), ("Email", draft["email"]), ("Date", draft["date"])):
        env.type(value, element=element(env, label))
    _, text = image_of(env.click(element=element(env, "Review")))
    assert '"Confirm booking"' in text  # the critical point is in front of the agent
    assert env.site_state["draft"] == draft and env.site_state["bookings"] == []
    env.click(element=element(env, "Confirm booking"))  # crossing it books: the verifier must see that
    assert len(env.site_state["bookings"]) == 1


def test_page_load_timeout_is_a_step_error_and_step_budget_ends_the_episode(make_env):
    with make_env(page_load_timeout_s=1.0, max_steps=2) as env:
        env.reset(task_id="library-riverside-saturday")
        t0 = time.monotonic()
        _, text = image_of(env.goto("/_slow?s=8"))  # the load is stopped after its timeout
        assert time.monotonic() - t0 < 4
        assert "/library/" in text  # still on the page it came from
        assert "Timeout" in text and env.episode_error is None
        image_of(env.goto("/library/"))
        assert "step budget of 2 actions exhausted" in env.scroll("down")[0]["text"]
        traj = env.trajectory
        assert traj.status is RunStatus.step_budget_exhausted and len(traj.steps) == 2
        assert "Timeout" in traj.steps[0].error


def test_killed_browser_is_an_episode_error_not_a_hang(make_env):
    with make_env() as env:
        env.reset(task_id="shop-cheapest-wireless-mouse")
        image_of(env.scroll("down"))
        assert env.browser_process.kill(), "no browser process found to kill"
        t0 = time.monotonic()
        result = env.click(element=1)
        assert time.monotonic() - t0 < 10
        assert result[0]["type"] == "text" and "Episode error" in result[0]["text"]
        rec = env.recorded_trajectory
        assert rec.status is RunStatus.aborted and "episode error" in rec.steps[-1].error
        assert len(rec.steps) == 2 and env.done
        with pytest.raises(TrajectoryError, match="episode error"):
            env.trajectory  # noqa: B018 - the rewards read this property: None for the machine's failure
        assert "episode is over" in env.scroll("down")[0]["text"]
        env.reset(task_id="library-riverside-saturday")  # a new browser for the next episode
        image_of(env.scroll("down"))
        assert env.episode_error is None and env.browser_process.alive()


def test_watchdog_kills_a_stuck_call(make_env):
    with make_env(watchdog_s=1.0, action_timeout_s=30.0) as env:
        env.reset(task_id="library-riverside-saturday")
        t0 = time.monotonic()
        result = env.goto("/_slow?s=6")  # the navigation waits longer than the watchdog allows
        assert time.monotonic() - t0 < 5
        assert "watchdog" in result[0]["text"] and env.recorded_trajectory.status is RunStatus.aborted


def test_crashed_page_is_an_episode_error_and_the_next_episode_works(env):
    env.reset(task_id="library-riverside-saturday")
    with pytest.raises(Exception, match="ERR_ABORTED"):
        env._page.goto("chrome://crash", timeout=5000)  # the renderer dies, the browser lives
    result = env.scroll("down")
    assert result[0]["type"] == "text" and "the page crashed" in result[0]["text"]
    assert env.recorded_trajectory.status is RunStatus.aborted and env.browser_process.alive()
    image_of(env.reset(task_id="library-riverside-saturday"))
    image_of(env.scroll("down"))
    assert env.episode_error is None


def test_close_all_leaves_the_thread_able_to_run_asyncio(env):
    import asyncio

    env.reset(task_id="library-riverside-saturday")
    with pytest.raises(RuntimeError):
        asyncio.run(asyncio.sleep(0))  # the sync driver's loop is this thread's running loop
    close_all()
    assert asyncio.run(asyncio.sleep(0, result=7)) == 7
    image_of(env.reset(task_id="library-riverside-saturday"))  # and the env comes back on next use


def test_policy_sees_a_thumbnail_and_the_recording_keeps_full_size(make_env):
    """A 1280x800 screenshot costs a VLM ~1.3 k tokens per step: the policy gets `policy_max_side`."""
    env = make_env(policy_max_side=128)
    try:
        parts = env.reset(task_id="library-riverside-saturday")
        (img,) = [p["image"] for p in parts if p["type"] == "image"]
        assert max(img.size) == 128
        shot = env.trajectory.screenshots[0]
        assert shot.image().size == (480, 320)
    finally:
        env.__exit__(None, None, None)
