"""`score-dataset` on agent-framework runs: an OSWorld results tree (runs 5 levels down) with a folder
of task configs, a browser-use history file given directly, and the environment's score carried into
the records and the parquet columns beside (never inside) the verifier's result."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
import reward_fakes
from PIL import Image

from cua_verifier.cli import build_parser
from reward import RewardSettings


def png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buf, format="PNG")
    return buf.getvalue()


def run_cli(argv: list[str]) -> int:
    args = build_parser().parse_args(["score-dataset", *argv, "--no-progress"])
    return args.func(args, settings=RewardSettings(verify_fn=reward_fakes.fake_verify,
                                                   judge_factory=reward_fakes.fake_judge, cache_factory=None))


def osworld_run(run: Path, score: str | None) -> None:
    run.mkdir(parents=True)
    (run / "step_1_20250101@120000.png").write_bytes(png())
    (run / "traj.jsonl").write_text(json.dumps({"step_num": 1, "action_timestamp": "20250101@120000",
                                                "action": "DONE", "screenshot_file": "step_1_20250101@120000.png"}) + "\n")
    if score is not None:
        (run / "result.txt").write_text(score)


def test_osworld_tree_with_task_folder_to_parquet(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    root = tmp_path / "results"
    base = root / "pyautogui" / "screenshot" / "m"
    osworld_run(base / "chrome" / "t1", "1.0")
    osworld_run(base / "gimp" / "t2", "0.0")
    osworld_run(base / "gimp" / "t3", None)  # no config for it: that run alone is unscored
    for domain, tid in (("chrome", "t1"), ("gimp", "t2")):
        (tmp_path / "examples" / domain).mkdir(parents=True, exist_ok=True)
        (tmp_path / "examples" / domain / f"{tid}.json").write_text(json.dumps({"id": tid, "instruction": f"do {tid}"}))
    out = tmp_path / "res.parquet"
    assert run_cli([str(root), "--out", str(out), "--task-file", str(tmp_path / "examples")]) == 3
    rows = {r["id"]: r for r in pq.read_table(out).to_pylist()}
    assert sorted(rows) == ["pyautogui/screenshot/m/chrome/t1", "pyautogui/screenshot/m/gimp/t2",
                            "pyautogui/screenshot/m/gimp/t3"]
    t1, t2, t3 = (rows[k] for k in sorted(rows))
    assert (t1["env_score"], t1["env_success"], t1["agent_claim"]) == (1.0, True, True)
    assert (t2["env_score"], t2["env_success"]) == (0.0, False)
    assert t3["status"] == "unscored" and "no task config t3.json" in t3["reason"]
    assert "env_score" not in t1["result_json"]


def test_browser_use_file_needs_its_instruction(shared_data, tmp_path, capsys):
    src = tmp_path / "AgentHistory.json"
    shutil.copy(shared_data / "trajectories" / "browser-use-jakkaj-bfcl" / "AgentHistory.json", src)
    out = tmp_path / "res.jsonl"
    assert run_cli([str(src), "--out", str(out)]) == 3
    rec = json.loads(out.read_text().splitlines()[0])
    assert rec["status"] == "unscored" and "--task-file PATH or --instruction TEXT" in rec["reason"]
    assert "error: 1 run(s) lack their task instruction: pass --task-file PATH or --instruction TEXT" in (
        capsys.readouterr().err)
    assert run_cli([str(src), "--out", str(out), "--instruction", "Find the leaderboards"]) == 0
    rec = json.loads(out.read_text().splitlines()[-1])
    assert rec["status"] == "scored" and rec["other_verdicts"]["agent_claim"]["success"] is True


def test_browser_use_file_publishes_its_results_like_a_folder(shared_data, tmp_path):
    """Publishing decides what the source is as scoring does (`is_run_source`): a browser-use
    history is a run, with no input columns to keep, not a JSON data file to join by row id."""
    datasets = pytest.importorskip("datasets")
    src = tmp_path / "AgentHistory.json"
    shutil.copy(shared_data / "trajectories" / "browser-use-jakkaj-bfcl" / "AgentHistory.json", src)
    pub = tmp_path / "pub"
    assert run_cli([str(src), "--out", str(tmp_path / "o.jsonl"), "--instruction", "Find the leaderboards",
                    "--publish-dir", str(pub)]) == 0
    ds = datasets.load_dataset(str(pub), split="train", cache_dir=str(tmp_path / "cache"))
    assert ds["uv_id"] == ["AgentHistory.json"] and ds["uv_status"] == ["scored"]


def test_ray_backend_reads_a_browser_use_file_with_the_loaders(shared_data, tmp_path, monkeypatch):
    """`score-dataset --ray` reads a browser-use history as the local path does (the loaders, with
    --instruction), never as a JSON data file for Ray Data; Ray itself is not needed to list it."""
    import sys

    from verifier.distributed.ray_backend import source_spec
    from verifier.settings import RewardSettings

    monkeypatch.setitem(sys.modules, "ray", None)  # an import of ray (Ray Data) would fail here
    src = tmp_path / "AgentHistory.json"
    shutil.copy(shared_data / "trajectories" / "browser-use-jakkaj-bfcl" / "AgentHistory.json", src)
    args = build_parser().parse_args(["score-dataset", str(src), "--out", str(tmp_path / "o.jsonl"),
                                      "--instruction", "Find the leaderboards"])
    ((rid, _desc, load),) = list(source_spec(args, RewardSettings()).items())  # as each actor reads it
    assert rid == "AgentHistory.json" and load().task.instruction == "Find the leaderboards"
