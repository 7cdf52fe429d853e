"""A step's two coordinate frames (issue 35 §1): the agent's numbers stay in `arguments`, the
screenshot's go to `step.screen`, and everything that shows a step next to the screenshots (the
judge's history, the baselines, the viewer) shows the screenshot's."""
from __future__ import annotations

import json

import pytest

from browser_env.pointer import screen_frame
from verifier.baselines._common import action_history
from verifier.config import VerifierConfig
from verifier.coordinates import ScreenFrame, to_screen
from verifier.rendering import render_step
from verifier.session import rollout_key
from verifier.trajectory import Step, Task, Trajectory
from verifier.viewer.timeline import timeline_view


def thumbnail_click() -> Step:
    frame = screen_frame(313, 210, (448, 280), (960, 600))
    return Step(index=1, action="click", arguments={"x": 313, "y": 210}, screen=frame)


def test_the_point_is_scaled_per_axis_and_equal_frames_map_each_pixel_to_itself():
    assert to_screen(313, 210, (448, 280), (960, 600)) == (671, 451)
    assert to_screen(0, 0, (448, 280), (960, 600)) == (1, 1)
    assert to_screen(447, 279, (448, 280), (960, 600)) == (958, 598)
    assert all(to_screen(x, x, (640, 640), (640, 640)) == (x, x) for x in range(640))
    assert to_screen(100, 100, (448, 299), (1280, 855)) == (287, 287)  # each side rounded on its own


@pytest.mark.parametrize("point", [(448, 10), (10, 280), (-1, 5), ("left", 5), (None, 5)])
def test_a_point_outside_the_image_shown_or_not_a_number_is_refused(point):
    with pytest.raises(ValueError, match="screenshot you were shown"):
        screen_frame(*point, (448, 280), (960, 600))


def test_the_judge_the_baselines_and_the_viewer_read_screenshot_pixels():
    step = thumbnail_click()
    traj = Trajectory(task=Task(id="t", instruction="click it"), steps=[step])
    assert step.screen == ScreenFrame(arguments={"x": 671, "y": 451}, agent_size=(448, 280), screen_size=(960, 600))
    for text in (render_step(step, VerifierConfig()), action_history(traj),
                 timeline_view({}, traj, lambda *_: None)["steps"][-1]["arguments"]):
        assert '"x": 671' in text and "313" not in text


def test_both_frames_round_trip_and_steps_without_one_serialise_as_before():
    traj = Trajectory(task=Task(id="t", instruction="x"), steps=[thumbnail_click()])
    assert Trajectory.model_validate_json(traj.to_json()).steps[0] == traj.steps[0]
    plain = Step(index=1, action="click", arguments={"x": 3, "y": 4})
    assert "screen" not in json.loads(plain.model_dump_json())  # old recordings keep their rollout keys
    assert rollout_key(Trajectory(task=Task(id="t", instruction="x"), steps=[plain])) != rollout_key(traj)
