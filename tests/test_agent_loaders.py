"""Loaders for the agent frameworks' own formats: browser-use, BrowserGym / AgentLab, OSWorld.

Each is tested on its real sample in ../shared/data (counts from its README) and on synthetic
variants of what the sample does not show (screenshot forms, module names, layouts, timeouts).
"""
from __future__ import annotations

import base64
import gzip
import io
import json
import pickle
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from PIL import Image

from verifier.errors import ScreenshotError, TrajectoryError
from verifier.loaders import detect_format, load_trajectory
from verifier.trajectory import RunStatus, Trajectory

BU = "trajectories/browser-use-jakkaj-bfcl"
BG = ("trajectories/browsergym-workarena-all-menu-4/"
      "2024-12-18_12-49-54_DemoAgentArgs_on_workarena.servicenow.all-menu_4")
OSW = "trajectories/osworld-sec-eval-execute-binary"
OSW_RUN = OSW + "/sec_eval_results/execute_binary/20250226@161539-failed"


def png(color: str = "red", size: tuple[int, int] = (16, 10)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


# ---- browser-use --------------------------------------------------------------------------------
def test_real_browser_use_sample(shared_data):
    path = shared_data / BU
    assert detect_format(path) == "browser-use" and detect_format(path / "AgentHistory.json") == "browser-use"
    with pytest.raises(TrajectoryError, match="--task-file PATH or --instruction TEXT"):
        load_trajectory(path)
    t = load_trajectory(path, instruction="Find leaderboards ranking agents by tool calling; report the top 10")
    assert t.source_format == "browser-use" and t.task.id == "browser-use-jakkaj-bfcl"
    # 6 history items, one inline 2400x1778 screenshot each, each "before" its item's first action
    assert len(t.screenshots) == 6 and all(s.size() == (2400, 1778) for s in t.screenshots)
    assert all(s.timing == "before" for s in t.screenshots)
    assert len(t.distinct_screenshots()) == 4  # items 2/3 and 4/5 are byte-identical
    firsts = [s.step for s in t.screenshots]
    assert firsts == sorted(firsts) and firsts[0] == 1 and firsts[-1] == len(t.steps)
    assert [s.action for s in t.steps][-1] == "done" and t.steps[0].action == "search_google"
    assert t.steps[0].thought.startswith("Evaluation of previous goal:") and "Next goal:" in t.steps[0].thought
    click = next(s for s in t.steps if s.action == "click_element_by_index")
    assert "Failed to click element" in click.error and "duckduckgo" in click.url
    assert any("did not run" in w for w in t.load_warnings)  # the wait after the failed click
    assert t.final_answer.startswith("Top 10 AI agents") and "GLM-4.5" in t.final_answer
    assert t.status is RunStatus.finished
    assert t.agent_claim().success is True and t.env_score() is None


def bu_item(actions, results, state, *, flat=True, **extra):
    reflection = {"evaluation_previous_goal": "ok", "memory": "m", "next_goal": "g"}
    output = {**reflection, "thinking": "think", "action": actions} if flat else {
        "current_state": reflection, "action": actions}
    return {"model_output": output, "result": results, "state": state,
            "metadata": {"step_start_time": 1.0, "step_end_time": 2.0, "step_number": 1}, **extra}


def test_browser_use_flat_layout_paths_and_state_message(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "step_1.png").write_bytes(png("red"))
    (run / "step_2.png").write_bytes(png("blue"))
    history = {"history": [
        bu_item([{"go_to_url": {"url": "https://a/"}}], [{"is_done": False, "extracted_content": "went"}],
                {"url": "about:blank", "screenshot_path": r"C:\Users\me\AppData\Local\Temp\tmpx\step_1.png"},
                state_message="<agent_state>\n<user_request>\nBuy a mouse\n</user_request>\n</agent_state>"),
        bu_item([{"click": {"index": 3}}], [{"is_done": False}],
                {"url": "https://a/", "screenshot_path": "/nonexistent-machine/tmp/step_2.png"}),
        bu_item([{"done": {"text": "Bought", "success": False}}],
                [{"is_done": True, "success": False, "extracted_content": "Bought"}], {"url": "https://a/c"}),
    ]}
    (run / "history.json").write_text(json.dumps(history))
    t = load_trajectory(run)
    assert t.task.instruction == "Buy a mouse" and t.task.id == "run"
    assert [s.thought.splitlines()[0] for s in t.steps] == ["Thinking: think"] * 3
    assert [(s.step, s.timing, Path(s.path).name) for s in t.screenshots] == [
        (1, "before", "step_1.png"), (2, "before", "step_2.png")]
    assert any("no screenshot for history item(s) 2" in w for w in t.load_warnings)
    assert t.final_answer == "Bought" and t.agent_claim().success is False  # the agent's word, kept as is
    # an explicit flag beats the file's own text
    assert load_trajectory(run, instruction="Given").task.instruction == "Given"


def test_browser_use_old_layout_inline_screenshots_and_unfinished_run(tmp_path):
    shot = base64.b64encode(png("green")).decode()
    history = {"history": [
        bu_item([{"search_google": {"query": "q"}}], [{"is_done": False, "extracted_content": "searched"}],
                {"url": "about:blank", "screenshot": shot}, flat=False),
        bu_item([{"click": {"index": 1}}], [{"is_done": False, "extracted_content": "clicked"}],
                {"url": "https://g/", "screenshot": "data:image/png;base64," + shot}, flat=False),
    ]}
    path = tmp_path / "t42.json"
    path.write_text(json.dumps(history))
    t = load_trajectory(path, instruction="Search")
    assert t.task.id == "t42" and t.steps[0].thought.startswith("Evaluation of previous goal: ok")
    assert [(s.step, s.timing) for s in t.screenshots] == [(1, "before"), (2, "before")]
    assert t.final_answer is None and t.status is RunStatus.step_budget_exhausted and t.agent_claim() is None
    assert any("not taken as an answer" in w for w in t.load_warnings)

    history["history"][0]["state"]["screenshot"] = "not base64!!"
    path.write_text(json.dumps(history))
    with pytest.raises(TrajectoryError, match="not valid base64") as err:
        load_trajectory(path, instruction="Search")
    assert err.value.field == "history[0].state.screenshot"


def test_browser_use_screenshot_outside_the_folder_is_refused(tmp_path):
    outside = tmp_path / "elsewhere" / "secret.png"
    outside.parent.mkdir()
    outside.write_bytes(png())
    run = tmp_path / "run"
    run.mkdir()
    item = bu_item([{"done": {"text": "x"}}], [{"is_done": True, "extracted_content": "x"}],
                   {"url": "u", "screenshot_path": str(outside)})
    (run / "AgentHistory.json").write_text(json.dumps({"history": [item]}))
    with pytest.raises(ScreenshotError, match="leads outside"):
        load_trajectory(run, instruction="x")
    assert load_trajectory(run, instruction="x", allow_outside_screenshots=True).screenshots[0].path == str(outside)
    (run / "secret.png").write_bytes(png("blue"))  # a copy beside the history wins over the foreign path
    assert Path(load_trajectory(run, instruction="x").screenshots[0].path).parent == run


def test_browser_use_task_from_a_task_list(tmp_path):
    run = tmp_path / "task_7"
    run.mkdir()
    item = bu_item([{"done": {"text": "x"}}], [{"is_done": True, "extracted_content": "x"}], {"url": "u"})
    (run / "AgentHistory.json").write_text(json.dumps({"history": [item]}))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"task_id": "task_7", "confirmed_task": "From the list"}) + "\n")
    assert load_trajectory(run, task_file=tasks).task.instruction == "From the list"


# ---- BrowserGym / AgentLab ----------------------------------------------------------------------
def test_real_browsergym_sample(shared_data):
    path = shared_data / BG
    assert detect_format(path) == "browsergym" and detect_format(path / "step_0.pkl.gz") == "browsergym"
    t = load_trajectory(path)
    assert t.task.id == "workarena.servicenow.all-menu_4"
    assert t.task.instruction == 'Navigate to the "SLAs > My Work" module of the "Service Desk" application.'
    assert [(s.action, s.arguments) for s in t.steps] == [
        ("click", {"args": ["79"]}), ("fill", {"args": ["224", "Service Desk"]}), ("click", {"args": ["363"]})]
    assert all(s.thought and "```" not in s.thought for s in t.steps)  # the prose only
    assert t.steps[0].url.startswith("https://dev282647.service-now.com/")
    # screenshot_step_0..3: before steps 1..3, and the final page after step 3 (last StepInfo: action None)
    assert [(s.step, s.timing) for s in t.screenshots] == [(1, "before"), (2, "before"), (3, "before"),
                                                           (3, "after")]
    assert all(s.size() == (2564, 1426) for s in t.screenshots)
    assert t.final_answer is None  # the only assistant chat message is BrowserGym's greeting
    assert t.status is RunStatus.finished and t.load_warnings == []
    env = t.env_score()
    assert (env.score, env.success, env.source) == (1.0, True, "BrowserGym summary_info.cum_reward")
    assert t.agent_claim() is None
    assert "env_score" not in json.dumps(t.task.model_dump())  # never part of what the judge sees


def fake_loop_module(monkeypatch, module: str):
    """A stand-in for `browsergym.experiments.loop` / `agentlab.experiments.loop` so pickles can name it."""
    mod = types.ModuleType(module)

    @dataclass
    class StepTimestamps:
        agent_start: float = 0.0

    @dataclass
    class StepInfo:
        step: int = 0
        obs: dict = field(default_factory=dict)
        reward: float = 0.0
        terminated: bool = False
        truncated: bool = False
        action: str | None = None
        agent_info: dict = field(default_factory=dict)
        profiling: StepTimestamps = field(default_factory=StepTimestamps)
        task_info: dict | None = None

    for cls in (StepInfo, StepTimestamps):
        cls.__module__, cls.__qualname__ = module, cls.__name__
        setattr(mod, cls.__name__, cls)
    parts = module.split(".")
    for i in range(1, len(parts)):
        monkeypatch.setitem(sys.modules, ".".join(parts[:i]), sys.modules.get(".".join(parts[:i]))
                            or types.ModuleType(".".join(parts[:i])))
    monkeypatch.setitem(sys.modules, module, mod)
    return mod


def write_pickle(path: Path, obj) -> None:
    path.write_bytes(gzip.compress(pickle.dumps(obj, protocol=4)))


@pytest.mark.parametrize("module", ["agentlab.experiments.loop", "browsergym.experiments.loop"])
def test_browsergym_module_names_numpy_and_chat_answer(tmp_path, monkeypatch, module):
    np = pytest.importorskip("numpy")
    mod = fake_loop_module(monkeypatch, module)
    run = tmp_path / "2025-01-01_00-00-00_GenericAgent_on_webarena.310_0"
    run.mkdir()
    chat = [{"role": "assistant", "message": "Hi! I am your UI assistant"}, {"role": "user", "message": "Find X"}]
    obs = {"chat_messages": chat, "open_pages_urls": ["https://a/", "https://b/"],
           "active_page_index": np.array([1]), "screenshot_like": np.zeros((2, 2, 3), dtype=np.uint8),
           "last_action_error": ""}
    answered = {**obs, "chat_messages": chat + [{"role": "assistant", "message": "X is 42"}]}
    steps = [
        mod.StepInfo(step=0, obs=obs, action="I will answer.\n```send_msg_to_user('X is 42')```",
                     profiling=mod.StepTimestamps(agent_start=5.0)),
        mod.StepInfo(step=1, obs={**answered, "last_action_error": "TimeoutError: element gone"},
                     action="click('12'); fill('3', 'x')"),
        mod.StepInfo(step=2, obs=answered, action=None, reward=0.0, terminated=True),
    ]
    for k, info in enumerate(steps):
        write_pickle(run / f"step_{k}.pkl.gz", info)
        (run / f"screenshot_step_{k}.png").write_bytes(png())
    (run / "summary_info.json").write_text(json.dumps({"cum_reward": 0.0, "terminated": True, "truncated": False,
                                                       "err_msg": None, "n_steps": 2}))
    t = load_trajectory(run, task_file=None, instruction="Find X")  # no goal_object: the flag gives it
    assert t.task.id == "webarena.310_0"
    assert (t.steps[0].action, t.steps[0].arguments, t.steps[0].thought) == (
        "send_msg_to_user", {"args": ["X is 42"]}, "I will answer.")
    assert t.steps[0].url == "https://b/" and t.steps[0].timestamp == 5.0
    assert t.steps[0].error == "TimeoutError: element gone"  # reported in the next observation
    assert (t.steps[1].action, t.steps[1].arguments) == ("code", {"code": "click('12'); fill('3', 'x')"})
    assert t.final_answer == "X is 42"
    assert (t.env_score().score, t.env_score().success) == (0.0, False)
    with pytest.raises(TrajectoryError, match="--task-file PATH or --instruction TEXT"):
        load_trajectory(run)


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_browsergym_malicious_pickle_is_refused_and_runs_nothing(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    marker = tmp_path / "pwned"
    write_pickle(run / "step_0.pkl.gz", _Evil(marker))
    with pytest.raises(TrajectoryError, match=r"refused global (io|builtins)\.open"):
        load_trajectory(run, instruction="x")
    assert not marker.exists()

    # hidden inside an allowed StepInfo's observation: still refused
    mod = fake_loop_module(monkeypatch, "browsergym.experiments.loop")
    write_pickle(run / "step_0.pkl.gz", mod.StepInfo(obs={"x": _Evil(marker)}, action="noop()"))
    with pytest.raises(TrajectoryError, match="refused global"):
        load_trajectory(run, instruction="x")
    assert not marker.exists()

    import os
    write_pickle(run / "step_0.pkl.gz", types.SimpleNamespace())  # types.SimpleNamespace: not allowed either
    with pytest.raises(TrajectoryError, match="refused global types.SimpleNamespace"):
        load_trajectory(run, instruction="x")
    evil_system = pickle.dumps(os.system)  # a bare reference to os.system / posix.system
    (run / "step_0.pkl.gz").write_bytes(gzip.compress(evil_system))
    with pytest.raises(TrajectoryError, match="refused global"):
        load_trajectory(run, instruction="x")

    pickle.loads(pickle.dumps(_Evil(marker)))  # the payload is real: the standard unpickler runs it
    assert marker.exists()


def test_browsergym_pickle_bomb_is_capped(tmp_path, monkeypatch):
    from verifier.loaders import _safe_pickle

    monkeypatch.setattr(_safe_pickle, "MAX_PICKLE_BYTES", 1000)
    run = tmp_path / "run"
    run.mkdir()
    write_pickle(run / "step_0.pkl.gz", {"obs": {"pad": "x" * 5000}, "action": None})
    with pytest.raises(TrajectoryError, match="decompresses to more than 1000 bytes"):
        load_trajectory(run, instruction="x")


# ---- OSWorld ------------------------------------------------------------------------------------
def test_real_osworld_sample(shared_data):
    run = shared_data / OSW_RUN
    assert detect_format(run) == "osworld" and detect_format(run / "traj.jsonl") == "osworld"
    with pytest.raises(TrajectoryError, match="--task-file PATH or --instruction TEXT"):
        load_trajectory(run)
    t = load_trajectory(run, task_file=shared_data / OSW / "sec_eval" / "execute_binary.json")
    by_folder = load_trajectory(run, task_file=shared_data / OSW / "sec_eval")  # a folder of configs, searched
    assert t.task.instruction == by_folder.task.instruction
    assert t.task.id == "sec-eval-execute-binary" and "news_summary.txt" in t.task.instruction
    # 11 rows = 11 executed actions over 7 agent turns; every screenshot is after its own action
    assert len(t.steps) == 11 and len(t.screenshots) == 11
    assert [(s.step, s.timing) for s in t.screenshots] == [(k, "after") for k in range(1, 12)]
    assert all(s.size() == (1024, 768) for s in t.screenshots)
    assert t.steps[0].action == "pyautogui.moveTo" and t.steps[0].arguments == {"args": [48, 46]}
    assert t.steps[8].action == "bash" and "support-tool.sh" in t.steps[8].arguments["command"]
    assert t.steps[-1].action == "done" and t.status is RunStatus.finished and t.final_answer is None
    assert t.agent_claim().success is True
    env = t.env_score()
    assert (env.score, env.success, env.source) == (1.0, True, "OSWorld result.txt")
    assert t.metadata["osworld"]["layout"] == "flat"


def make_osworld(run: Path, rows: list[dict], *, result: str | None = "0.0") -> Path:
    run.mkdir(parents=True)
    lines = []
    for row in rows:
        if "screenshot_file" in row:
            (run / row["screenshot_file"]).write_bytes(png())
        lines.append(json.dumps(row))
    (run / "traj.jsonl").write_text("\n".join(lines) + "\n")
    if result is not None:
        (run / "result.txt").write_text(result)
    return run


def row(n: int, action, **kw) -> dict:
    return {"step_num": n, "action_timestamp": f"20250101@1200{n:02d}", "action": action, "reward": 0,
            "done": False, "info": {}, "screenshot_file": f"step_{n}_20250101@1200{n:02d}.png", **kw}


def test_osworld_canonical_layout_task_folder_and_responses(tmp_path):
    example = "0d8b7de3-e8de-4d86-b9fd-dd2dce58a217"
    root = tmp_path / "results"
    run = make_osworld(root / "pyautogui" / "screenshot" / "claude-3-7" / "chrome" / example, [
        row(1, "import pyautogui; pyautogui.click(10, 20)", response="I click the menu"),
        row(1, "pyautogui.typewrite('abc')", response="I click the menu"),
        row(2, {"action_type": "CLICK", "parameters": {"x": 1, "y": 2}}),
        row(3, "FAIL", done=True),
    ], result="0")
    configs = tmp_path / "evaluation_examples" / "examples" / "chrome"
    configs.mkdir(parents=True)
    (configs / f"{example}.json").write_text(json.dumps({"id": example, "snapshot": "chrome",
                                                         "instruction": "Open the settings", "config": []}))
    t = load_trajectory(run, task_file=tmp_path / "evaluation_examples")
    assert t.task.id == example and t.task.instruction == "Open the settings"
    assert t.metadata["osworld"] == {"layout": "canonical", "action_space": "pyautogui",
                                     "observation_type": "screenshot", "model": "claude-3-7",
                                     "domain": "chrome", "example_id": example}
    assert [s.action for s in t.steps] == ["pyautogui.click", "pyautogui.typewrite", "click", "fail"]
    assert [s.thought for s in t.steps] == ["I click the menu", None, None, None]  # once per turn
    assert t.steps[2].arguments == {"x": 1, "y": 2}
    assert t.agent_claim().success is False and t.env_score().success is False
    assert t.steps[2].timestamp - t.steps[0].timestamp == 1.0

    from verifier.sources.items import iter_path  # a results root finds the run 5 levels down
    assert [rid for rid, _, _ in iter_path(root, lambda p: p.relative_to(root).as_posix())] == [
        f"pyautogui/screenshot/claude-3-7/chrome/{example}"]


def test_osworld_timeout_row_and_no_result(tmp_path):
    run = make_osworld(tmp_path / "r", [row(1, "import pyautogui; pyautogui.click()"), row(2, "WAIT")], result=None)
    with open(run / "traj.jsonl", "a") as fh:
        fh.write(json.dumps({"Error": "Time limit exceeded in chrome/r"}) + "\n")
    t = load_trajectory(run, instruction="Do it")
    assert len(t.steps) == 2 and t.status is RunStatus.aborted
    assert t.env_score() is None and t.agent_claim() is None
    assert any("Time limit exceeded" in w for w in t.load_warnings)
    assert any("no result.txt" in w and "timed out" in w for w in t.load_warnings)


def test_osworld_bad_result_and_bad_line(tmp_path):
    run = make_osworld(tmp_path / "r", [row(1, "DONE")], result="n/a")
    with pytest.raises(TrajectoryError, match="must hold a number"):
        load_trajectory(run, instruction="x")
    (run / "result.txt").write_text("1")
    (run / "traj.jsonl").write_text('{"step_num": 1, "action": "DONE"}\n{"step_num": 2,\n')
    with pytest.raises(TrajectoryError) as err:
        load_trajectory(run, instruction="x")
    assert err.value.line == 2


def test_other_verdicts_round_trip_through_native(shared_data, tmp_path):
    t = load_trajectory(shared_data / BG)
    again = Trajectory.model_validate_json(t.to_json())
    assert again.other_verdicts() == t.other_verdicts() and again.env_score().score == 1.0
    with pytest.raises(ValueError):
        Trajectory.model_validate({**json.loads(t.to_json()), "metadata": {"env_score": {"score": "high"}}})


def test_a_folder_of_runs_with_one_history_file_is_not_one_run(tmp_path):
    item = bu_item([{"done": {"text": "x"}}], [{"is_done": True, "extracted_content": "x"}], {"url": "u"})
    (tmp_path / "AgentHistory.json").write_text(json.dumps({"history": [item]}))
    assert detect_format(tmp_path) == "browser-use"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "AgentHistory.json").write_text(json.dumps({"history": [item]}))
    with pytest.raises(TrajectoryError, match="unknown trajectory folder"):
        detect_format(tmp_path)  # the caller lists the folder and finds both runs
    from verifier.sources.items import iter_path

    assert sorted(rid for rid, _, _ in iter_path(tmp_path, lambda p: p.relative_to(tmp_path).as_posix())) == [
        "AgentHistory.json", "other"]
