"""The three ways a rollout reaches a TRL reward function, each turned into a Trajectory."""
from __future__ import annotations

import io

import pytest
from PIL import Image

from verifier.errors import TrajectoryError
from verifier.loaders.rollouts import build_trajectories, nesting_depth
from verifier.trajectory import RunStatus, Step, Task, Trajectory


def img(color: str) -> Image.Image:
    return Image.new("RGB", (8, 8), color)


def png(color: str) -> bytes:
    buf = io.BytesIO()
    img(color).save(buf, format="PNG")
    return buf.getvalue()


PROMPT = [{"role": "user", "content": [{"type": "image", "image": img("white")},
                                       {"type": "text", "text": "Find the cheapest flight"}]}]


def test_conversation_tool_calls_and_tool_images():
    completion = [
        {"role": "assistant", "content": "open search",
         "tool_calls": [{"type": "function", "function": {"name": "click", "arguments": {"x": 1, "y": 2}}}]},
        {"role": "tool", "name": "click", "content": [{"type": "image", "image": img("red")},
                                                      {"type": "text", "text": "clicked"}]},
        {"role": "assistant", "content": "",
         "tool_calls": [{"type": "function",
                         "function": {"name": "type_text", "arguments": '{"text": "NYC"}'}},
                        {"type": "function", "function": {"name": "bogus", "arguments": {}}}]},
        {"role": "tool", "name": "type_text", "content": [{"type": "image", "image": img("blue")}]},
        {"role": "tool", "name": "bogus", "content": "{'error': 'Tool bogus not found.'}"},
        {"role": "assistant", "content": "The cheapest is $99"},
    ]
    (t,) = build_trajectories([PROMPT], [completion], {})
    assert isinstance(t, Trajectory)
    assert t.task.instruction == "Find the cheapest flight" and t.task.id.startswith("task-")
    assert [(s.index, s.action) for s in t.steps] == [(1, "click"), (2, "type_text"), (3, "bogus")]
    assert t.steps[0].arguments == {"x": 1, "y": 2} and t.steps[0].thought == "open search"
    assert t.steps[1].arguments == {"text": "NYC"} and t.steps[2].error.startswith("{'error'")
    assert [(s.step, s.timing) for s in t.screenshots] == [(0, "after"), (1, "after"), (3, "after")]
    assert t.screenshots[1].image().getpixel((0, 0)) == (255, 0, 0)
    assert t.final_answer == "The cheapest is $99" and t.status == RunStatus.finished


def test_answer_tool_and_budget_exhaustion():
    answered = [{"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": {"name": "final_answer", "arguments": {"answer": "42"}}}]}]
    cut = [{"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "scroll", "arguments": {}}}]},
        {"role": "tool", "name": "scroll", "content": "ok"}]
    a, b = build_trajectories([PROMPT, PROMPT], [answered, cut], {}, answer_tools=["final_answer"])
    assert a.final_answer == "42"
    assert b.final_answer is None and b.status == RunStatus.step_budget_exhausted


def test_final_answer_is_the_last_text_turn_and_an_answer_tool_wins():
    think = {"role": "assistant", "content": "Let me check the fares first."}
    act = {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "click", "arguments": {"x": 1}}}]}
    done = {"role": "assistant", "content": "The cheapest is $99"}
    answer = {"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": {"name": "final_answer", "arguments": '{"answer": "$24.99"}'}}]}
    tool = {"role": "tool", "name": "click", "content": "ok"}
    a, b = build_trajectories([PROMPT, PROMPT], [[think, act, tool, done], [think, answer, done]], {})
    assert a.final_answer == "The cheapest is $99"  # the last text-only turn, not the first
    assert b.final_answer == "$24.99"  # an answer-tool call beats any text


def test_answer_tools_default_to_the_settings_default():
    from verifier.settings import DEFAULT_ANSWER_TOOLS

    for name in DEFAULT_ANSWER_TOOLS:
        call = [{"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": name, "arguments": {"answer": "42"}}}]}]
        (t,) = build_trajectories([PROMPT], [call], {})
        assert t.final_answer == "42", name
    (t,) = build_trajectories([PROMPT], [call], {}, answer_tools=())  # explicitly none: just a step
    assert t.final_answer is None

def test_same_prompt_gives_same_task_id_and_columns_win():
    a, b = build_trajectories([PROMPT, PROMPT], ["x", "y"], {})
    assert a.task.id == b.task.id and a.final_answer == "x"
    (c,) = build_trajectories([PROMPT], ["x"], {"task_id": ["T1"], "instruction": ["Do it"],
                                                "start_url": ["https://a.example"]})
    assert (c.task.id, c.task.instruction, c.task.start_url) == ("T1", "Do it", "https://a.example")


def test_rollout_fields_screenshots_actions_answer():
    kw = {"screenshots": [[png("white"), img("red"), "data:image/png;base64,"
                           + __import__("base64").b64encode(png("blue")).decode()]],
          "actions": [[{"action": "click", "arguments": {"x": 3}, "thought": "go"}, "scroll"]],
          "final_answer": ["done"], "task_id": ["T"]}
    (t,) = build_trajectories(["Book a room"], [""], kw)
    assert [s.action for s in t.steps] == ["click", "scroll"] and t.steps[0].thought == "go"
    assert [s.step for s in t.screenshots] == [0, 1, 2]  # one more screenshot than actions: first is initial
    assert t.final_answer == "done" and t.task.instruction == "Book a room"


def test_rollout_field_native_trajectory_forms():
    native = Trajectory(task=Task(id="n", instruction="x"), steps=[Step(index=1, action="click")],
                        final_answer="a")
    rows = [native, native.model_dump(mode="json"), native.to_json(), "{not json"]
    out = build_trajectories(["p"] * 4, [""] * 4, {"trajectory": rows})
    assert [o.task.id for o in out[:3]] == ["n", "n", "n"]
    assert isinstance(out[3], TrajectoryError) and out[3].field == "trajectory"


def test_environments_objects():
    native = Trajectory(task=Task(id="env", instruction="x"), final_answer="a")

    class WithProperty:  # the documented form: TRL does not turn properties into tools
        @property
        def trajectory(self):
            return native

    class WithJsonAttr:
        trajectory = native.to_json()

    class WithPrivateMethod:
        def _to_trajectory(self):
            return native.model_dump(mode="json")

    class Neither:
        pass

    envs = [WithProperty(), WithJsonAttr(), WithPrivateMethod(), Neither()]
    out = build_trajectories([PROMPT] * 4, ["c1", "c2", "c3", "c4"], {"environments": envs})
    assert [o.task.id for o in out[:3]] == ["env"] * 3
    assert out[3].final_answer == "c4"  # env without a trajectory: falls back to the completion


def test_row_errors_are_per_row():
    out = build_trajectories([[{"role": "system", "content": "x"}], PROMPT], ["a", "b"],
                             {"screenshots": [None, [object()]]})
    assert isinstance(out[0], TrajectoryError) and isinstance(out[1], TrajectoryError)
    assert "screenshot" in str(out[1])


@pytest.mark.parametrize("images_col", ["images", "image"])
def test_dataset_image_column_is_initial_screenshot(images_col):
    value = [img("white")] if images_col == "images" else img("white")
    (t,) = build_trajectories([[{"role": "user", "content": "go"}]], ["done"], {images_col: [value]})
    assert len(t.screenshots) == 1 and t.screenshots[0].step == 0


def _nested_json(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def _nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def _tool_call(arguments) -> list[dict]:
    return [{"role": "assistant", "content": "go", "tool_calls": [
        {"type": "function", "function": {"name": "click", "arguments": arguments}}]},
        {"role": "assistant", "content": "done"}]


@pytest.mark.parametrize("arguments", [_nested_json(300), _nested_json(1_200), _nested_json(100_000),
                                       _nested(300), _nested(33)],
                         ids=["json-300", "json-1200", "json-100000", "dict-300", "dict-33"])
def test_deeply_nested_tool_arguments_are_that_rows_error(arguments):
    """Issue 14 defect 2: >= 256 levels broke hashing, >= ~1,000 levels parsing, with exceptions
    that escaped the reward call. Now the row is a TrajectoryError naming the place; the next row
    is built normally."""
    ok_row = _tool_call({"x": 1})
    bad, good = build_trajectories([PROMPT, PROMPT], [_tool_call(arguments), ok_row], {})
    assert isinstance(bad, TrajectoryError) and "nested deeper than 32 levels" in str(bad)
    assert isinstance(good, Trajectory) and good.steps[0].arguments == {"x": 1}


def test_nesting_up_to_the_limit_is_kept():
    (t,) = build_trajectories([PROMPT], [_tool_call(_nested(32))], {})
    assert isinstance(t, Trajectory) and nesting_depth(t.steps[0].arguments, 100) == 32


@pytest.mark.parametrize("form", ["actions", "trajectory"])
def test_deep_arguments_in_rollout_fields_and_native_trajectories(form):
    step = {"action": "click", "arguments": _nested(300)}
    if form == "actions":
        kwargs = {"actions": [[step]], "final_answer": ["done"]}
    else:
        kwargs = {"trajectory": [{"task": {"id": "t", "instruction": "x"}, "steps": [{"index": 1, **step}]}]}
    (t,) = build_trajectories([PROMPT], [[]], kwargs)
    assert isinstance(t, TrajectoryError) and t.field == "steps[1].arguments"


def test_rollout_key_of_a_deep_trajectory_is_a_trajectory_error():
    """A Trajectory built in code (an environment's `trajectory`) is hashed before anything else."""
    from verifier.session import rollout_key

    traj = Trajectory(task=Task(id="t", instruction="x"),
                      steps=[Step(index=1, action="click", arguments=_nested(300))])
    with pytest.raises(TrajectoryError, match="cannot be serialised"):
        rollout_key(traj)


def test_nesting_depth_stops_early_and_does_not_recurse():
    assert nesting_depth({}, 5) == 1 and nesting_depth(3, 5) == 0 and nesting_depth([[1], {"a": [2]}], 5) == 3
    deep = _nested(200_000)  # far beyond the interpreter's recursion limit
    assert nesting_depth(deep, 32) == 33
