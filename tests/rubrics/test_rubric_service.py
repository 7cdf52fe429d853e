"""`serve-reward --rubrics FILE` and the `rubric` request field, on a real server (issue 36 §3)."""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytestmark = pytest.mark.slow  # a real serve-reward process and a loopback judge (seconds)

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service"))
from service_helpers import LoopbackJudge, Service, trajectory

from verifier.config import VerifierConfig
from verifier.stages.rubric import write_line
from verifier.testing import ScriptedJudge


def _line(task: str) -> dict:
    traj = trajectory(0, task)
    line = asyncio.run(write_line(traj, VerifierConfig(), ScriptedJudge(model="writer")))
    return json.loads(line.to_json_line())


def test_served_reward_scores_against_the_file_and_the_request_field(tmp_path):
    on_file, in_body = _line("task-a"), _line("task-b")
    rubrics = tmp_path / "rubrics.jsonl"
    rubrics.write_text(json.dumps(on_file) + "\n")
    with LoopbackJudge() as judge, Service(judge.url, "--rubrics", str(rubrics), "--rubrics-only") as svc:
        got = httpx.post(f"{svc.url}/v1/verify", json={"trajectory": trajectory(1, "task-a").model_dump(mode="json")},
                         timeout=120)
        assert got.status_code == 200, got.text
        source = got.json()["rubric_source"]
        assert source["kind"] == "file" and source["path"] == str(rubrics) and source["model"] == "writer"
        refused = httpx.post(f"{svc.url}/v1/verify",
                             json={"trajectory": trajectory(1, "task-b").model_dump(mode="json")}, timeout=120)
        assert refused.status_code == 422 and "RubricMissingError" in refused.text
        body = {"trajectory": trajectory(2, "task-b").model_dump(mode="json"), "rubric": in_body}
        inline = httpx.post(f"{svc.url}/v1/verify", json=body, timeout=120)
        assert inline.status_code == 200, inline.text
        assert inline.json()["rubric_source"]["kind"] == "inline"
        # OpenRLHF's body (and verl's, through reward.verl): the label carries the task and its rubric
        label = {"task_id": "task-b", "instruction": in_body["instruction"], "rubric": in_body}
        rl = httpx.post(f"{svc.url}/v1/openrlhf?on_failure=error", timeout=120,
                        json={"query": ["the hours are 9-5"], "prompts": [""], "labels": [json.dumps(label)]})
        assert rl.status_code == 200, rl.text
        assert rl.json()["extra_logs"]["uv_unscored"] == [0.0]
        assert judge.rubric_calls == 0


def test_verl_puts_the_rows_rubric_in_its_label():
    from reward.verl import _request

    body, _ = _request("answer", "Find the hours", {"rubric": {"criteria": []}}, {})
    assert json.loads(body["labels"][0]) == {"instruction": "Find the hours", "rubric": {"criteria": []}}


def test_a_bad_rubric_file_stops_the_server_before_it_listens(tmp_path):
    bad = tmp_path / "rubrics.jsonl"
    bad.write_text('{"task_id": "t"}\n')
    import subprocess

    from service_helpers import env

    cmd = [sys.executable, "-c", "from cua_verifier.cli import main; raise SystemExit(main())", "serve-reward",
           "--port", "0", "--judge-url", "http://127.0.0.1:9/v1", "--model", "echo", "--rubrics", str(bad)]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env(), timeout=120)
    assert done.returncode == 2 and "rubrics.jsonl:1: task 't' field" in done.stderr
