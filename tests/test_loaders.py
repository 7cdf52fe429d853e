"""Loaders: real samples, synthetic folders / rows in each format, and every bad-input case."""
from __future__ import annotations

import hashlib
import io
import json
import time
from pathlib import Path

import pytest
from PIL import Image

from verifier.errors import ScreenshotError, TrajectoryError
from verifier.loaders import (
    detect_format,
    iter_cuavb_dataset,
    load_cuavb_row,
    load_trajectories,
    load_trajectory,
)
from verifier.trajectory import RunStatus, Trajectory

FARA = "trajectories/fara-alltrails-find-23"
OM2W = "trajectories/om2w-fb7b4f784cfde003e2548fdf4e8d6b4f"


def png(color: str = "red", size: tuple[int, int] = (16, 10)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


COLORS = ["red", "green", "blue", "yellow", "white", "black", "gray", "orange"]


def websurfer_events(n: int, *, last_terminal: bool = True) -> list[dict]:
    """GPT-solver style: a summary event (action null) then the real action event per step."""
    events = []
    for i in range(1, n + 1):
        terminal = last_terminal and i == n
        tool = "stop_and_answer_question" if terminal else "click"
        args = {"state_description": f"page {i}", "reasoning": f"because {i}",
                **({"answer": "done"} if terminal else {"target_id": i})}
        events.append({"timestamp": f"2025-01-01T00:00:{i:02d}", "type": "WebSurferEvent",
                       "source": "WebSurfer-SummarizedAction", "message": f"Action {i}", "url": f"https://x/{i}",
                       "action": None, "arguments": None})
        events.append({"timestamp": f"2025-01-01T00:00:{i:02d}", "type": "WebSurferEvent", "source": "WebSurfer",
                       "message": f"{tool}(...)", "url": f"https://x/{i}", "action": tool, "arguments": args})
    events.append({"type": "WebSurferEvent", "source": "WebSurfer", "message": "Web surfing done.",
                   "url": "https://x/end", "action": None, "arguments": None})
    return events


def fara_text_events(n: int) -> list[dict]:
    """Fara-native text-only form: OtherEvent debug strings."""
    events = []
    for i in range(1, n + 1):
        args = ({"action": "terminate", "status": "success", "thoughts": f"thinking {i}"} if i == n else
                {"action": "left_click", "coordinate": [10 * i, 20], "thoughts": f"thinking {i}"})
        events.append({"timestamp": f"2025-01-01T00:01:{i:02d}", "type": "OtherEvent",
                       "message": f"Thought #{i}: thinking {i}\nAction #{i}: executing tool 'computer_use' "
                                  f"with arguments {json.dumps(args)}"})
        events.append({"timestamp": f"2025-01-01T00:01:{i:02d}", "type": "OtherEvent",
                       "message": f"Observation#{i}: clicked"})
    return events


def make_fara(root: Path, *, events=None, log: bytes | None = None, answer: dict | None = None,
              shots: list[str] = (), task: str | None = "Find the thing", task_id: str = "demo_1") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if log is None:
        log = "\n".join(json.dumps(e) for e in (events if events is not None else websurfer_events(3))).encode()
    (root / "web_surfer.log").write_bytes(log)
    if answer is not False:
        ans = {"final_answer": "done", "screenshots": [], "is_aborted": False, "is_rel_paths": True}
        ans.update(answer or {})
        (root / f"{task_id}_final_answer.json").write_text(json.dumps(ans))
    for i, name in enumerate(shots):
        (root / name).write_bytes(png(COLORS[i % len(COLORS)]))
    if task is not None:
        (root / "task_data.json").write_text(json.dumps({"task_summary": task, "init_url": "https://x/"}))
    return root


# ---- real samples ---------------------------------------------------------------------------------

def test_real_fara_sample(shared_data):
    t = load_trajectory(shared_data / FARA)
    assert t.source_format == "fara" and detect_format(shared_data / FARA) == "fara"
    assert t.task.id == "alltrails_find_23"
    assert t.task.instruction.startswith("Identify the best waterfalls")
    assert [s.action for s in t.steps] == ["input_text", "click", "pause_and_memorize_fact",
                                         "stop_and_answer_question"]
    first = t.steps[0]
    assert "reasoning" not in first.arguments and "state_description" not in first.arguments
    assert first.arguments["input_field_id"] == 22
    assert "perform a web search" in first.thought and "Bing home page" in first.thought
    assert first.url == "https://www.bing.com/" and first.timestamp is not None
    assert t.final_answer.startswith("The two standout waterfalls") and t.status is RunStatus.finished
    assert [(s.step, s.timing) for s in t.screenshots] == [(1, "before"), (2, "before"), (3, "before"),
                                                           (4, "before")]
    assert t.screenshots[2].sha256 == t.screenshots[3].sha256 != t.screenshots[1].sha256
    assert t.load_warnings == []


def test_real_om2w_sample(shared_data):
    t = load_trajectory(shared_data / OM2W)
    assert detect_format(shared_data / OM2W / "result.json") == "om2w"  # a file of the folder works too
    assert load_trajectory(shared_data / OM2W / "result.json").model_dump() == t.model_dump()
    assert t.source_format == "om2w" and t.task.id == "fb7b4f784cfde003e2548fdf4e8d6b4f"
    assert t.task.instruction.startswith("Open the page with an overview")
    assert [s.action for s in t.steps] == ["click"] * 4
    assert t.steps[1].thought.startswith("Accept cookies")
    assert t.steps[3].arguments["element"].startswith("<a href=")
    assert [(s.step, s.timing) for s in t.screenshots] == [(1, "before"), (2, "before"), (3, "before"),
                                                           (4, "before"), (4, "after")]
    assert t.screenshots[-1].path.endswith("4_full_screenshot.png")
    assert "support.discogs.com" in t.final_answer and t.load_warnings == []


def test_real_sample_converts_to_native_and_back(shared_data, tmp_path):
    t = load_trajectory(shared_data / FARA)
    out = tmp_path / "t.json"
    out.write_text(t.to_json())
    with pytest.raises(ScreenshotError, match="outside the trajectory folder"):
        load_trajectory(out)  # its screenshots are files of another folder: refused unless allowed
    back = load_trajectory(out, allow_outside_screenshots=True)
    assert back.model_dump(exclude={"source_path"}) == t.model_dump(exclude={"source_path"})
    assert [s.sha256 for s in back.screenshots] == [s.sha256 for s in t.screenshots]


# ---- fara folder ----------------------------------------------------------------------------------

def test_fara_structured_log_and_pre_action_screenshots(tmp_path):
    root = make_fara(tmp_path / "run", shots=["screenshot_1.png", "screenshot_2.png", "screenshot_3.png"])
    t = load_trajectory(root)
    assert load_trajectory(root / "web_surfer.log").steps == t.steps
    assert t.task.id == "demo_1" and t.task.start_url == "https://x/"
    assert [s.action for s in t.steps] == ["click", "click", "stop_and_answer_question"]
    assert t.steps[0].arguments == {"target_id": 1}
    assert t.steps[0].thought == "State: page 1\nReasoning: because 1"
    assert [(s.step, s.timing) for s in t.screenshots] == [(1, "before"), (2, "before"), (3, "before")]
    assert t.load_warnings == []


def test_fara_text_only_log_and_native_screenshot_numbering(tmp_path):
    shots = [f"screenshot{i}.png" for i in range(4)]  # Fara-native: 0 = initial page
    root = make_fara(tmp_path / "run", events=fara_text_events(3), shots=shots)
    t = load_trajectory(root)
    assert [s.action for s in t.steps] == ["left_click", "left_click", "terminate"]
    assert t.steps[0].arguments == {"coordinate": [10, 20]}
    assert t.steps[0].thought == "thinking 1"  # said twice in the log, kept once, never in arguments
    assert [(s.step, s.timing) for s in t.screenshots] == [(1, "before"), (2, "before"), (3, "before"),
                                                           (3, "after")]
    assert t.screenshots[0].path.endswith("screenshot0.png")
    assert t.status is RunStatus.finished


def test_fara_arguments_logged_as_json_string(tmp_path):
    events = websurfer_events(1)
    events[1]["arguments"] = json.dumps(events[1]["arguments"])
    t = load_trajectory(make_fara(tmp_path / "r", events=events))
    assert t.steps[0].arguments == {"answer": "done"} and t.steps[0].thought


def test_fara_no_answer_aborted_and_budget(tmp_path):
    t = load_trajectory(make_fara(tmp_path / "a", answer={"final_answer": "<no_answer>", "is_aborted": True}))
    assert t.final_answer is None and t.status is RunStatus.aborted
    t = load_trajectory(make_fara(tmp_path / "b", events=websurfer_events(3, last_terminal=False),
                                  answer={"final_answer": "<no_answer>"}))
    assert t.final_answer is None and t.status is RunStatus.step_budget_exhausted
    t = load_trajectory(make_fara(tmp_path / "c", answer={"final_answer": "<no_answer>"}))
    assert t.final_answer is None and t.status is RunStatus.finished  # stopped on its own, no answer


def test_fara_instruction_sources(tmp_path):
    root = make_fara(tmp_path / "r", task=None)
    with pytest.raises(TrajectoryError, match="no task instruction"):
        load_trajectory(root)
    assert load_trajectory(root, instruction="Given here").task.instruction == "Given here"
    tsv = tmp_path / "tasks.tsv"
    tsv.write_text("id\ttask_summary\tinit_url\tbenchmark\nother\tNo\t\t\ndemo_1\tFrom the TSV\thttps://s/\tweb\n")
    t = load_trajectory(root, task_file=tsv)
    assert (t.task.instruction, t.task.start_url, t.task.metadata) == ("From the TSV", "https://s/",
                                                                       {"benchmark": "web"})
    jsonl = tmp_path / "tasks.jsonl"
    jsonl.write_text(json.dumps({"task_id": "demo_1", "confirmed_task": "From JSONL", "website": "https://w/"}))
    assert load_trajectory(root, task_file=jsonl).task.instruction == "From JSONL"
    with pytest.raises(TrajectoryError, match="'demo_1' not found"):
        load_trajectory(root, task_file=_write(tmp_path / "e.tsv", "id\ttask_summary\n"))
    (root / "task.txt").write_text("From task.txt\n")
    assert load_trajectory(root).task.instruction == "From task.txt"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_fara_missing_final_answer_file(tmp_path):
    root = make_fara(tmp_path / "r", answer=False)
    with pytest.raises(TrajectoryError, match="missing final-answer file") as err:
        load_trajectory(root)
    assert err.value.file == str(root)


def test_fara_two_final_answer_files(tmp_path):
    root = make_fara(tmp_path / "r")
    (root / "other_final_answer.json").write_text("{}")
    with pytest.raises(TrajectoryError, match="more than one final-answer file"):
        load_trajectory(root)


def test_fara_corrupt_final_answer_json_names_line(tmp_path):
    root = make_fara(tmp_path / "r")
    (root / "demo_1_final_answer.json").write_text('{\n  "final_answer": "x",\n  "is_aborted": fals\n}')
    with pytest.raises(TrajectoryError) as err:
        load_trajectory(root)
    assert err.value.line == 3 and err.value.file.endswith("demo_1_final_answer.json")


@pytest.mark.parametrize("log,match,line", [
    (b"", "is empty", None),
    (b"  \n\n", "is empty", None),
    (b'{"type": "OtherEvent", "message": "hi"}\n{"type": "WebSurferEvent", "act', "truncated last line", 2),
    (b'{"type": "OtherEvent", "message": "ok"}\n{"message": "caf\xe9"}\n', "not valid UTF-8", 2),
    (b'{"type": "OtherEvent", "message": "nothing to do"}\n', "no actions found", None),
    (b'[1, 2]\n', "not an object", 1),
])
def test_fara_bad_logs(tmp_path, log, match, line):
    root = make_fara(tmp_path / "r", log=log)
    with pytest.raises(TrajectoryError, match=match) as err:
        load_trajectory(root)
    assert err.value.file.endswith("web_surfer.log")
    assert err.value.line == line


def test_fara_bad_action_arguments_name_line_and_field(tmp_path):
    events = websurfer_events(2)
    events[3]["arguments"] = ["not", "a", "dict"]
    with pytest.raises(TrajectoryError) as err:
        load_trajectory(make_fara(tmp_path / "r", events=events))
    assert (err.value.line, err.value.field) == (4, "arguments")
    bad_text = [{"type": "OtherEvent", "message": "Action #1: executing tool 'x' with arguments {oops"}]
    with pytest.raises(TrajectoryError, match="not valid JSON") as err:
        load_trajectory(make_fara(tmp_path / "s", events=bad_text))
    assert err.value.line == 1


def test_fara_missing_listed_screenshot(tmp_path):
    root = make_fara(tmp_path / "r", shots=["screenshot_1.png"],
                     answer={"screenshots": ["screenshot_1.png", "screenshot_2.png"]})
    with pytest.raises(ScreenshotError, match="missing") as err:
        load_trajectory(root)
    assert err.value.file.endswith("screenshot_2.png")


def test_fara_absolute_listed_paths_from_another_machine(tmp_path):
    root = make_fara(tmp_path / "r", shots=["screenshot_1.png"],
                     answer={"screenshots": ["/elsewhere/run/screenshot_1.png"], "is_rel_paths": False})
    t = load_trajectory(root)
    assert t.screenshots[0].path == str(root / "screenshot_1.png")


def test_fara_corrupt_screenshot(tmp_path):
    root = make_fara(tmp_path / "r", shots=["screenshot_1.png", "screenshot_2.png"])
    (root / "screenshot_2.png").write_bytes(b"\x89PNG but not really")
    with pytest.raises(ScreenshotError, match="screenshot 2 of 2") as err:
        load_trajectory(root)
    assert err.value.file.endswith("screenshot_2.png")
    # with the load-time check off the run still loads; the error comes when pixels are needed
    t = load_trajectory(root, check_images=False)
    with pytest.raises(ScreenshotError):
        t.screenshots[1].image()


def test_fara_screenshot_count_mismatch_is_a_warning(tmp_path):
    fewer = load_trajectory(make_fara(tmp_path / "a", events=websurfer_events(5),
                                      shots=["screenshot_1.png", "screenshot_2.png", "screenshot_4.png"]))
    assert len(fewer.steps) == 5 and len(fewer.screenshots) == 3
    assert [s.step for s in fewer.screenshots] == [1, 2, 4]  # numbered by name: a gap, not a shift
    assert fewer.load_warnings == ["3 screenshots for 5 steps: no screenshot before step(s) 3, 5"]
    more = load_trajectory(make_fara(tmp_path / "b", events=websurfer_events(2),
                                     shots=[f"screenshot_{i}.png" for i in range(1, 6)]))
    assert [(s.step, s.timing) for s in more.screenshots][-3:] == [(2, "after")] * 3
    assert "3 screenshots come after the last step" in more.load_warnings[0]
    none = load_trajectory(make_fara(tmp_path / "c", events=websurfer_events(2)))
    assert none.screenshots == [] and "no screenshot before step(s) 1-2" in none.load_warnings[0]


def test_fara_two_files_with_the_same_number(tmp_path):
    root = make_fara(tmp_path / "r", shots=["screenshot_1.png", "screenshot1.png"])
    with pytest.raises(TrajectoryError, match="both number 1"):
        load_trajectory(root)


def test_500_step_trajectory_loads_quickly_and_lazily(tmp_path):
    n = 500
    root = make_fara(tmp_path / "big", events=websurfer_events(n))
    data = png(size=(320, 200))
    for i in range(1, n + 1):
        (root / f"screenshot_{i}.png").write_bytes(data)
    start = time.perf_counter()
    t = load_trajectory(root)
    elapsed = time.perf_counter() - start
    assert len(t.steps) == n and len(t.screenshots) == n and t.load_warnings == []
    assert elapsed < 3.0, f"500-step load took {elapsed:.2f}s"
    assert all(s._raw is None and s._pil is None for s in t.screenshots)  # nothing decoded or kept
    assert len(t.distinct_screenshots()) == 1


# ---- Online-Mind2Web folder ------------------------------------------------------------------------

def make_om2w(root: Path, result: dict | str, n_shots: int) -> Path:
    (root / "trajectory").mkdir(parents=True)
    (root / "result.json").write_text(result if isinstance(result, str) else json.dumps(result))
    for i in range(n_shots):
        (root / "trajectory" / f"{i}_full_screenshot.png").write_bytes(png(COLORS[i % len(COLORS)]))
    return root


OM2W_RESULT = {"task_id": "abc", "task": "Do X", "final_result_response": "Done",
               "action_history": ["<input> -> TYPE: shoes", "<button> -> CLICK"], "thoughts": ["t1", "t2"]}


def test_om2w_synthetic_parsing(tmp_path):
    t = load_trajectory(make_om2w(tmp_path / "r", OM2W_RESULT, 3))
    assert [(s.action, s.arguments) for s in t.steps] == [("type", {"element": "<input>", "value": "shoes"}),
                                                         ("click", {"element": "<button>"})]
    assert [(s.step, s.timing) for s in t.screenshots] == [(1, "before"), (2, "before"), (2, "after")]


def test_om2w_empty_answer_and_mismatches(tmp_path):
    result = {**OM2W_RESULT, "final_result_response": "", "thoughts": ["only one"]}
    t = load_trajectory(make_om2w(tmp_path / "r", result, 1))
    assert t.final_answer is None and t.status is RunStatus.step_budget_exhausted
    assert t.load_warnings == ["1 thoughts for 2 actions (paired by position)",
                               "1 screenshots for 2 steps: no screenshot before step(s) 2"]


@pytest.mark.parametrize("result,match,field", [
    ('{"task": "x",', "not valid JSON", None),
    ({**OM2W_RESULT, "task": ""}, "instruction", "task"),
    ({**OM2W_RESULT, "action_history": "click"}, "list of strings", "action_history"),
    ({**OM2W_RESULT, "action_history": ["ok", 3]}, "must be a string", "action_history[1]"),
])
def test_om2w_bad_result_json(tmp_path, result, match, field):
    with pytest.raises(TrajectoryError, match=match) as err:
        load_trajectory(make_om2w(tmp_path / "r", result, 1))
    assert err.value.file.endswith("result.json") and err.value.field == field


# ---- CUAVerifierBench rows -------------------------------------------------------------------------

def cuavb_row(n_actions: int = 2, **over) -> dict:
    log = "\n".join(json.dumps(e) for e in fara_text_events(n_actions))
    shots = [Image.new("RGB", (16, 10), COLORS[i]) for i in range(n_actions)]
    shots.append({"bytes": png("black"), "path": "last.png"})  # parquet-style dict
    row = {"task_id": "Shop--1234", "instruction": "Buy socks", "init_url": "https://shop/",
           "start_timestamp": "", "end_timestamp": "", "final_answer": "<no_answer>", "is_aborted": False,
           "web_surfer_log": log, "screenshots": shots, "n_screenshots": len(shots),
           "uv_rubric_score": 0.5, "final_human_outcome_label": 1}
    row.update(over)
    return row


def test_cuavb_row_schema(tmp_path):
    t = load_trajectory(cuavb_row(3))
    assert t.source_format == "cuavb" and t.task.id == "Shop--1234" and t.task.start_url == "https://shop/"
    assert t.final_answer is None and t.status is RunStatus.finished  # terminated, no answer
    assert [s.action for s in t.steps] == ["left_click", "left_click", "terminate"]
    assert [(s.step, s.timing) for s in t.screenshots] == [(1, "before"), (2, "before"), (3, "before"),
                                                           (3, "after")]
    assert "uv_rubric_score" not in json.dumps(t.task.model_dump())  # labels never reach the task
    back = Trajectory.model_validate_json(t.to_json())  # in-memory images survive JSON
    assert [s.sha256 for s in back.screenshots][-1] == t.screenshots[-1].sha256
    assert load_trajectory(cuavb_row(2, final_answer="Done", is_aborted=True)).status is RunStatus.aborted


@pytest.mark.parametrize("over,exc,match,field", [
    ({"screenshots": "nope"}, TrajectoryError, "list of images", "screenshots"),
    ({"instruction": " "}, TrajectoryError, "non-empty", "instruction"),
    ({"web_surfer_log": ""}, TrajectoryError, "is empty", None),
    ({"web_surfer_log": b"\xff\xfe"}, TrajectoryError, "UTF-8", None),
    ({"screenshots": [{"bytes": b"garbage", "path": None}]}, ScreenshotError, "screenshot 1 of 1", "screenshots[0]"),
    ({"screenshots": [{"bytes": None, "path": None}]}, TrajectoryError, "neither bytes nor a path", "screenshots[0]"),
])
def test_cuavb_bad_rows(over, exc, match, field):
    with pytest.raises(exc, match=match) as err:
        load_cuavb_row(cuavb_row(2, **over), source="bench row 7")
    assert err.value.file.startswith("bench row 7") and err.value.field == field


def test_cuavb_missing_column():
    row = cuavb_row()
    del row["web_surfer_log"]
    with pytest.raises(TrajectoryError, match="lacks column"):
        load_cuavb_row(row)


def test_cuavb_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = []
    for k in range(3):
        row = cuavb_row(2, task_id=f"t{k}", final_answer=f"answer {k}")
        row["screenshots"] = [{"bytes": png(COLORS[i]), "path": f"{i}.png"} for i in range(3)]
        rows.append(row)
    path = tmp_path / "bench.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    assert detect_format(path) == "cuavb-parquet"
    trajs = list(load_trajectories(path))
    assert [t.task.id for t in trajs] == ["t0", "t1", "t2"]
    assert trajs[1].final_answer == "answer 1" and len(trajs[2].screenshots) == 3
    assert trajs[1].source_path == f"{path} row 1"
    with pytest.raises(TrajectoryError, match="more than one"):
        load_trajectory(path)
    pq.write_table(pa.Table.from_pylist([{"task_id": "x"}]), tmp_path / "other.parquet")
    with pytest.raises(TrajectoryError, match="not a CUAVerifierBench"):
        list(load_trajectories(tmp_path / "other.parquet"))


def test_cuavb_datasets_dataset():
    datasets = pytest.importorskip("datasets")
    row = cuavb_row(2)
    row["screenshots"] = [png(COLORS[i]) for i in range(3)]
    features = datasets.Features({"task_id": datasets.Value("string"), "instruction": datasets.Value("string"),
                                  "init_url": datasets.Value("string"), "final_answer": datasets.Value("string"),
                                  "is_aborted": datasets.Value("bool"), "web_surfer_log": datasets.Value("string"),
                                  "screenshots": datasets.Sequence(datasets.Image())})
    ds = datasets.Dataset.from_list([{k: row[k] for k in features}], features=features)
    (t,) = list(iter_cuavb_dataset(ds))
    assert len(t.steps) == 2 and len(t.screenshots) == 3 and t.screenshots[0].size() == (16, 10)
    assert t.screenshots[1].sha256 == hashlib.sha256(row["screenshots"][1]).hexdigest()  # original bytes
    (decoded,) = list(iter_cuavb_dataset([ds[0]]))  # plain rows with PIL images work too
    assert isinstance(ds[0]["screenshots"][0], Image.Image) and len(decoded.screenshots) == 3


# ---- native format ---------------------------------------------------------------------------------

def test_examples_load(repo_root):
    expected = {"library-hours-success": (3, 4), "concert-sold-out-blocked": (3, 4),
                "mouse-price-side-effect": (4, 5)}
    for name, (n_steps, n_shots) in expected.items():
        folder = repo_root / "examples" / "trajectories" / name
        assert detect_format(folder) == "native"
        t = load_trajectory(folder)
        assert (len(t.steps), len(t.screenshots), t.load_warnings) == (n_steps, n_shots, [])
        assert t.final_answer and t.status is RunStatus.finished
        assert t.screenshots[-1].timing == "after" and Path(t.screenshots[0].path).is_file()


def test_native_jsonl_relative_paths_and_data_urls(tmp_path):
    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / "a.png").write_bytes(png("green"))
    base = {"task": {"id": "n1", "instruction": "x"}, "steps": [{"index": 1, "action": "click"}]}
    r1 = {**base, "screenshots": [{"step": 1, "path": "imgs/a.png"}]}
    from verifier.trajectory import Screenshot
    r2 = {**base, "final_answer": "y",
          "screenshots": [{"step": 1, "timing": "after", "data_url": Screenshot.from_bytes(png(), step=1).as_data_url()}]}
    path = tmp_path / "many.jsonl"
    path.write_text(json.dumps(r1) + "\n\n" + json.dumps(r2) + "\n")
    t1, t2 = load_trajectories(path)
    assert t1.screenshots[0].path == str(tmp_path / "imgs" / "a.png") and t1.final_answer is None
    assert t2.screenshots[0].size() == (16, 10) and t2.source_path == f"{path}:3"


@pytest.mark.parametrize("line2,match,field", [
    ({"task": {"id": "n", "instruction": "x"}, "steps": [{"index": 2, "action": "a"}]}, "expected 1", None),
    ({"task": {"id": "n", "instruction": "x"}, "steps": [{"index": 1}]}, "Field required", "steps.0.action"),
    ({"task": {"id": "n", "instruction": "x"}, "screenshots": [{"step": 0, "path": "gone.png"}]}, "missing",
     "screenshots[0]"),
    ({"schema_version": "2.0", "task": {"id": "n", "instruction": "x"}}, "not supported", "schema_version"),
    ({"task": {"id": "n", "instruction": "x"}, "bogus": 1}, "Extra inputs", "bogus"),
])
def test_native_bad_records_name_line_and_field(tmp_path, line2, match, field):
    good = {"task": {"id": "ok", "instruction": "x"}}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(line2) + "\n")
    with pytest.raises(TrajectoryError, match=match) as err:
        list(load_trajectories(path))
    assert err.value.line == 2 or err.value.file.endswith("gone.png")
    assert err.value.field == field


def test_native_from_dict_and_detection_errors(tmp_path):
    t = load_trajectory({"task": {"id": "d", "instruction": "x"}})
    assert t.task.id == "d" and t.steps == []
    with pytest.raises(TrajectoryError, match="cannot tell the format"):
        load_trajectory({"foo": 1})
    (tmp_path / "empty").mkdir()
    with pytest.raises(TrajectoryError, match="unknown trajectory folder"):
        detect_format(tmp_path / "empty")
    with pytest.raises(TrajectoryError, match="unknown trajectory file type"):
        detect_format(_write(tmp_path / "a.txt", "x"))
    with pytest.raises(TrajectoryError, match="no such file"):
        load_trajectory(tmp_path / "nope")
    with pytest.raises(TrajectoryError, match="unknown format"):
        load_trajectory(tmp_path / "empty", format="bogus")


# ---- JSON nested too deeply (issue 14, defect 1) ----------------------------------------------------
# ~100,000 levels made the parser raise RecursionError, which no caller caught: every loader must
# turn it (and a parseable but absurd depth) into a TrajectoryError naming the file (and line).

DEEP = "[" * 100_000 + "]" * 100_000  # over the parser's recursion limit
DEEPISH = '{"a": ' * 500 + "1" + "}" * 500  # parses, but over MAX_JSON_DEPTH (and pydantic's 255)


def _native_record(**over) -> dict:
    return {"task": {"id": "t", "instruction": "Do it"}, "steps": [{"index": 1, "action": "click"}],
            "final_answer": "ok", **over}


@pytest.mark.parametrize("payload", [DEEP, DEEPISH])
def test_deep_native_json_is_a_trajectory_error(tmp_path, payload):
    path = _write(tmp_path / "t.json", payload)
    with pytest.raises(TrajectoryError, match="nested too deeply") as err:
        load_trajectory(path)
    assert err.value.file == str(path)


def test_deep_native_jsonl_line_names_its_line_and_spares_the_others(tmp_path):
    path = _write(tmp_path / "t.jsonl", json.dumps(_native_record()) + "\n" + DEEP + "\n")
    it = load_trajectories(path)
    assert next(it).task.id == "t"  # the good line before it still loads
    with pytest.raises(TrajectoryError, match="nested too deeply") as err:
        next(it)
    assert (err.value.file, err.value.line) == (str(path), 2)


def test_deep_arguments_in_a_native_record_or_dict(tmp_path):
    deep_args = json.loads(DEEPISH)
    record = _native_record(steps=[{"index": 1, "action": "click", "arguments": deep_args}])
    with pytest.raises(TrajectoryError, match="nested too deeply"):
        load_trajectory(record)  # an already-parsed dict (e.g. a dataset row)
    path = _write(tmp_path / "t.jsonl", json.dumps(record) + "\n")
    with pytest.raises(TrajectoryError, match="nested too deeply") as err:
        load_trajectory(path)
    assert err.value.line == 1
    shallow = _native_record(steps=[{"index": 1, "action": "click", "arguments": json.loads('{"a": ' * 50 + "1" + "}" * 50)}])
    assert load_trajectory(shallow).steps[0].arguments  # realistic nesting still loads


def test_deep_fara_files(tmp_path):
    root = make_fara(tmp_path / "a")
    (root / "demo_1_final_answer.json").write_text(DEEP)
    with pytest.raises(TrajectoryError, match="nested too deeply") as err:
        load_trajectory(root)
    assert err.value.file.endswith("demo_1_final_answer.json")

    log = (json.dumps(websurfer_events(1)[0]) + "\n" + DEEP + "\n").encode()
    with pytest.raises(TrajectoryError, match="nested too deeply") as err:
        load_trajectory(make_fara(tmp_path / "b", log=log))
    assert err.value.file.endswith("web_surfer.log") and err.value.line == 2

    events = websurfer_events(1)
    events[1]["arguments"] = DEEP  # arguments logged as a JSON string
    with pytest.raises(TrajectoryError, match="nested too deeply") as err:
        load_trajectory(make_fara(tmp_path / "c", events=events))
    assert (err.value.line, err.value.field) == (2, "arguments")

    text = [{"type": "OtherEvent", "message": f"Action #1: executing tool 'x' with arguments {DEEP}"}]
    with pytest.raises(TrajectoryError, match="nested too deeply") as err:
        load_trajectory(make_fara(tmp_path / "d", events=text))
    assert err.value.line == 1

    root = make_fara(tmp_path / "e", task=None)
    (root / "task_data.json").write_text(DEEP)
    with pytest.raises(TrajectoryError, match="nested too deeply") as err:
        load_trajectory(root)
    assert err.value.file.endswith("task_data.json")
    tasks = _write(tmp_path / "tasks.jsonl", DEEP + "\n")
    with pytest.raises(TrajectoryError, match="nested too deeply") as err:
        load_trajectory(make_fara(tmp_path / "f", task=None), task_file=tasks)
    assert (err.value.file, err.value.line) == (str(tasks), 1)


def test_deep_om2w_result_json(tmp_path):
    with pytest.raises(TrajectoryError, match="nested too deeply") as err:
        load_trajectory(make_om2w(tmp_path / "r", DEEP, 1))
    assert err.value.file.endswith("result.json")
    result = {**OM2W_RESULT, "extra": json.loads(DEEPISH)}
    with pytest.raises(TrajectoryError, match="nested too deeply"):
        load_trajectory(make_om2w(tmp_path / "s", result, 1))


def test_deep_cuavb_web_surfer_log():
    log = json.dumps(fara_text_events(1)[0]) + "\n" + DEEP
    with pytest.raises(TrajectoryError, match="nested too deeply") as err:
        load_cuavb_row(cuavb_row(1, web_surfer_log=log), source="bench row 3")
    assert err.value.file.startswith("bench row 3") and err.value.line == 2
