"""AgentLab's GenericAgent runs (issue 35 §5): `agent_info` is an `AgentInfo` holding a `Discussion`.

The stand-in classes below carry the real module and class names, so the pickles name exactly the
globals a GenericAgent run (AgentLab 0.4.2) names; the restricted unpickler must answer those with
inert records in a step file and keep refusing them anywhere else.
"""
from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_agent_loaders import fake_loop_module, png, write_pickle

from verifier.errors import TrajectoryError
from verifier.loaders import load_trajectory


def _module(monkeypatch, name: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    parts = name.split(".")
    for i in range(1, len(parts)):
        monkeypatch.setitem(sys.modules, ".".join(parts[:i]), sys.modules.get(".".join(parts[:i]))
                            or types.ModuleType(".".join(parts[:i])))
    monkeypatch.setitem(sys.modules, name, mod)
    return mod


def fake_agent_modules(monkeypatch):
    """`browsergym.experiments.agent.AgentInfo` and `agentlab.llm.llm_utils` (Discussion, messages)."""
    agent, llm = _module(monkeypatch, "browsergym.experiments.agent"), _module(monkeypatch, "agentlab.llm.llm_utils")

    @dataclass
    class AgentInfo:
        think: str | None = None
        chat_messages: object = None
        stats: dict = field(default_factory=dict)
        markdown_page: str = ""
        html_page: str = ""
        extra_info: dict | None = None

    class BaseMessage(dict):
        def __init__(self, role, content):
            self["role"], self["content"] = role, content

    class HumanMessage(BaseMessage):
        def __init__(self, content):
            super().__init__("user", content)

    class AIMessage(BaseMessage):
        def __init__(self, content):
            super().__init__("assistant", content)

    class Discussion:
        def __init__(self, messages=None):
            self.messages = list(messages or [])

    class Agent:  # another class of the same module: must stay refused
        pass

    for mod, classes in ((agent, (AgentInfo, Agent)), (llm, (BaseMessage, HumanMessage, AIMessage, Discussion))):
        for cls in classes:
            cls.__module__, cls.__qualname__ = mod.__name__, cls.__name__
            setattr(mod, cls.__name__, cls)
    return agent, llm


def generic_agent_run(tmp_path: Path, monkeypatch) -> tuple[Path, types.ModuleType, types.ModuleType]:
    loop = fake_loop_module(monkeypatch, "browsergym.experiments.loop")
    agent, llm = fake_agent_modules(monkeypatch)
    run = tmp_path / "study" / "2025-03-01_10-00-00_GenericAgent-gpt-4o_on_miniwob.click-test_7"
    run.mkdir(parents=True)
    chat = [{"role": "assistant", "message": "Hi! I am your UI assistant"}, {"role": "user", "message": "Click it"}]

    def info(think: str):
        talk = llm.Discussion([llm.HumanMessage([{"type": "text", "text": "# Goal\nClick it"}]),
                               llm.AIMessage(f"<think>{think}</think><action>click('a12')</action>")])
        return agent.AgentInfo(think=think, chat_messages=talk, stats={"n_retry": 0, "input_tokens": 812},
                               extra_info={"chat_model_args": {"model_name": "gpt-4o", "temperature": 0.1}})

    steps = [loop.StepInfo(step=0, obs={"chat_messages": chat, "url": "https://x/"}, action="click('a12')",
                           agent_info=info("The button labelled Submit is a12.")),
             loop.StepInfo(step=1, obs={"chat_messages": chat, "url": "https://x/done"}, action=None,
                           terminated=True)]
    for k, step in enumerate(steps):
        write_pickle(run / f"step_{k}.pkl.gz", step)
        (run / f"screenshot_step_{k}.png").write_bytes(png())
    write_pickle(run / "goal_object.pkl.gz", [{"type": "text", "text": "Click it"}])
    (run / "summary_info.json").write_text(json.dumps({"cum_reward": 1.0, "terminated": True, "truncated": False,
                                                       "err_msg": None, "n_steps": 1}))
    return run, agent, llm


def test_generic_agent_run_loads_and_keeps_think_as_the_thought(tmp_path, monkeypatch):
    run, _, _ = generic_agent_run(tmp_path, monkeypatch)
    t = load_trajectory(run)
    assert t.task.instruction == "Click it" and t.task.id == "miniwob.click-test_7"
    assert [(s.action, s.arguments) for s in t.steps] == [("click", {"args": ["a12"]})]
    assert t.steps[0].thought == "The button labelled Submit is a12."  # agent_info.think, not the bare call
    assert t.env_score().success is True


def test_older_dict_agent_info_think_is_the_thought_too(tmp_path, monkeypatch):
    loop = fake_loop_module(monkeypatch, "agentlab.experiments.loop")
    run = tmp_path / "r"
    run.mkdir()
    write_pickle(run / "step_0.pkl.gz", loop.StepInfo(obs={}, action="noop()", agent_info={"think": " wait "}))
    (run / "screenshot_step_0.png").write_bytes(png())
    assert load_trajectory(run, instruction="x").steps[0].thought == "wait"


def test_agent_classes_stay_refused_elsewhere(tmp_path, monkeypatch):
    run, agent, llm = generic_agent_run(tmp_path, monkeypatch)
    # another class of the same modules
    write_pickle(run / "step_1.pkl.gz", {"obs": {}, "action": None, "agent_info": agent.Agent()})
    with pytest.raises(TrajectoryError, match="refused global browsergym.experiments.agent.Agent"):
        load_trajectory(run)
    write_pickle(run / "step_1.pkl.gz", {"obs": {}, "action": None})
    load_trajectory(run)  # the run itself is fine
    # the agent's classes in a goal file: a goal is plain data, nothing there may name a class
    write_pickle(run / "goal_object.pkl.gz", [agent.AgentInfo(think="x")])
    with pytest.raises(TrajectoryError, match="refused global browsergym.experiments.agent.AgentInfo"):
        load_trajectory(run)
    write_pickle(run / "goal_object.pkl.gz", llm.Discussion())
    with pytest.raises(TrajectoryError, match="refused global agentlab.llm.llm_utils.Discussion"):
        load_trajectory(run)


def test_browsergym_experiments_two_folders_deep_are_found_by_a_folder_scan(tmp_path, monkeypatch):
    from verifier.sources.items import iter_path

    run, _, _ = generic_agent_run(tmp_path / "results", monkeypatch)  # results/study/<experiment>
    root = tmp_path / "results"
    ids = [rid for rid, _, _ in iter_path(root, lambda p: p.relative_to(root).as_posix())]
    assert ids == [run.relative_to(root).as_posix()]
    (root / "notes").mkdir()  # a folder holding no run is still skipped
    assert [rid for rid, _, _ in iter_path(root, lambda p: p.relative_to(root).as_posix())] == ids


# ---- OSWorld, newer copies: step_0.png and instruction.txt ----------------------------------------
def test_osworld_start_screen_and_instruction_file_are_read(tmp_path):
    from test_agent_loaders import make_osworld, row

    run = make_osworld(tmp_path / "chrome" / "abc-123", [row(1, "import pyautogui; pyautogui.click(1, 2)"),
                                                         row(2, "DONE")], result="1")
    (run / "step_0.png").write_bytes(png("blue"))
    (run / "instruction.txt").write_text("Open the history page\n")
    t = load_trajectory(run)  # no --task-file needed
    assert t.task.instruction == "Open the history page"
    assert next((Path(s.path).name, s.step, s.timing) for s in t.screenshots) == ("step_0.png", 1, "before")
    assert [(s.step, s.timing) for s in t.screenshots[1:]] == [(1, "after"), (2, "after")]
    assert load_trajectory(run, instruction="Other").task.instruction == "Other"  # the flag still wins
    (run / "instruction.txt").write_text("  \n")  # empty: as before, the task must come from elsewhere
    with pytest.raises(TrajectoryError, match="--task-file PATH or --instruction TEXT"):
        load_trajectory(run)
