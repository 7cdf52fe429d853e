"""`cua-verifier inspect`: readable summaries of every format, JSON output, exit 2 on bad input."""
from __future__ import annotations

import argparse
import io
import json

import pytest
from PIL import Image

from cua_verifier.cli import inspect_cmd, main

EXAMPLE = "examples/trajectories/mouse-price-side-effect"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """The inspect subcommand alone (other subcommands' imports cannot break these tests)."""
    parser = argparse.ArgumentParser()
    inspect_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["inspect", *argv])
    rc = args.func(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_wired_into_the_cli(capsys, repo_root):
    assert main(["inspect", str(repo_root / EXAMPLE), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["task"]["id"] == "example-mouse-price"


def test_example_text_summary(capsys, repo_root):
    rc, out, _ = run(capsys, str(repo_root / EXAMPLE))
    assert rc == 0
    assert "example-mouse-price" in out and "How much does the Acme X200" in out
    assert "Start URL    https://shop.example.net/" in out
    assert "Final answer The Acme X200 wireless mouse costs $24.99." in out
    assert "3. click(element=\"button 'Add to cart'\")" in out
    assert "thought: Add it to the cart" in out and "url: https://shop.example.net/p/acme-x200" in out
    assert "Screenshots (5, 4 distinct)" in out
    last = out.strip().splitlines()[-1]
    assert "step 4" in last and "after" in last and "640x400" in last and "duplicate of #4" in last


def test_real_fara_sample_json(capsys, shared_data):
    rc, out, _ = run(capsys, str(shared_data / "trajectories/fara-alltrails-find-23"), "--json")
    assert rc == 0
    info = json.loads(out)
    assert info["task"]["id"] == "alltrails_find_23" and info["status"] == "finished"
    assert [s["action"] for s in info["steps"]][-1] == "stop_and_answer_question"
    assert "reasoning" not in info["steps"][0]["arguments"] and info["steps"][0]["thought"]
    shots = info["screenshots"]
    assert [(s["width"], s["height"]) for s in shots] == [(1440, 900)] * 4
    assert [s["duplicate_of"] for s in shots] == [None, None, None, 3]
    assert info["distinct_screenshots"] == 3 and len(shots[0]["sha256"]) == 64


def test_real_om2w_sample_text(capsys, shared_data):
    rc, out, _ = run(capsys, str(shared_data / "trajectories/om2w-fb7b4f784cfde003e2548fdf4e8d6b4f"),
                     "--format", "om2w")
    assert rc == 0 and "[om2w]" in out and "Steps (4)" in out and "Screenshots (5, 5 distinct)" in out
    assert "1280x1100" in out


def test_no_answer_and_warnings_are_shown(capsys, tmp_path):
    rec = {"task": {"id": "w", "instruction": "x"}, "steps": [{"index": 1, "action": "click", "error": "timeout"}],
           "final_answer": None, "status": "step_budget_exhausted", "load_warnings": ["0 screenshots for 1 steps"]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(rec))
    rc, out, _ = run(capsys, str(path))
    assert rc == 0
    assert "Final answer (no answer)" in out and "Status       step_budget_exhausted" in out
    assert "! 0 screenshots for 1 steps" in out and "ERROR: timeout" in out


def test_parquet_many_rows_with_limit(capsys, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    buf = io.BytesIO()
    Image.new("RGB", (20, 10), "red").save(buf, format="PNG")
    log = json.dumps({"type": "OtherEvent", "message": "Thought #1: go\nAction #1: executing tool 'computer_use' "
                      "with arguments {\"action\": \"terminate\"}"})
    rows = [{"task_id": f"t{k}", "instruction": "Do it", "init_url": "", "final_answer": "<no_answer>",
             "is_aborted": False, "web_surfer_log": log,
             "screenshots": [{"bytes": buf.getvalue(), "path": "a.png"}] * 2} for k in range(3)]
    path = tmp_path / "b.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    rc, out, _ = run(capsys, str(path), "--json", "--limit", "2")
    assert rc == 0
    infos = [json.loads(line) for line in out.splitlines()]
    assert [i["task"]["id"] for i in infos] == ["t0", "t1"]
    assert infos[0]["final_answer"] is None and infos[0]["screenshots"][1]["duplicate_of"] == 1


def test_bad_input_exits_2_with_located_message(capsys, tmp_path):
    root = tmp_path / "run"
    root.mkdir()
    (root / "web_surfer.log").write_bytes(b'{"type": "OtherEvent"}\n{"trunc')
    (root / "x_final_answer.json").write_text("{}")
    rc, out, err = run(capsys, str(root))
    assert rc == 2 and out == ""
    assert "web_surfer.log:2" in err and "truncated" in err
    rc, _, err = run(capsys, str(tmp_path / "missing"))
    assert rc == 2 and "no such file" in err


def test_corrupt_screenshot_exits_2(capsys, tmp_path):
    (tmp_path / "bad.png").write_bytes(b"nope")
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"task": {"id": "c", "instruction": "x"},
                                "screenshots": [{"step": 0, "timing": "after", "path": "bad.png"}]}))
    rc, _, err = run(capsys, str(path))
    assert rc == 2 and "bad.png" in err and "not a readable image" in err


def test_write_native_round_trips(capsys, tmp_path, shared_data):
    out = tmp_path / "conv.jsonl"
    rc, _, _ = run(capsys, str(shared_data / "trajectories/om2w-fb7b4f784cfde003e2548fdf4e8d6b4f"),
                   "--write-native", str(out), "--embed-images")
    assert rc == 0
    (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(s["path"] is None and s["data_url"].startswith("data:image/png") for s in rec["screenshots"])
    from verifier.loaders import load_trajectory

    back = load_trajectory(out)
    orig = load_trajectory(shared_data / "trajectories/om2w-fb7b4f784cfde003e2548fdf4e8d6b4f")
    assert back.steps == orig.steps and back.final_answer == orig.final_answer
    assert [s.sha256 for s in back.screenshots] == [s.sha256 for s in orig.screenshots]
