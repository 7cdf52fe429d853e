"""The judge server dies in the middle of an offline scoring run (`score-dataset`).

Expected: the run finishes on its own; rollouts scored before the crash stay in the log untouched;
the rest are `unscored` with a transport-error reason (never zero scores); a rerun against a fresh
server skips the scored ids and retries only the unscored ones. The server is SIGKILLed as a
whole process group, as a crashed node would vanish. Named `zz` so it runs last; the `engine`
fixture restarts the server for any test that needs it afterwards.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pipeline_support import GAP_FLOAT_DIGITS, GAP_NO_CRITERION, floats_bounded, synthetic_trajectory

pytestmark = pytest.mark.engine

TASKS = ["Find a dog-friendly trail near Boulder.", "Book a table for two at 7pm.",
         "Compare the prices of two laptops.", "Subscribe to the newsletter with a test address.",
         "Find the opening hours of the city library.", "Add a blue T-shirt to the cart.",
         "Look up tomorrow's weather in Oslo.", "Rename the shared folder to Reports."]


def _records(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip().endswith("}")]


def _score_dataset(src: Path, out: Path, engine, cfg: Path) -> subprocess.Popen:
    argv = [sys.executable, "-c", "import sys; from verifier.cli import main; sys.exit(main(sys.argv[1:]))",
            "score-dataset", str(src), "--out", str(out), "--judge-url", engine.base_url,
            "--model", engine.model, "--config", str(cfg), "--concurrency", "2", "--no-progress"]
    env = {**os.environ, "CUA_JUDGE_API_KEY": engine.api_key}
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_server_killed_mid_run(engine, tmp_path):
    src = tmp_path / "rollouts"
    src.mkdir()
    for i, task in enumerate(TASKS[:5]):
        traj = synthetic_trajectory(6, task_id=f"t{i}", seed=i)
        traj = traj.model_copy(update={"task": traj.task.model_copy(update={"instruction": task})})
        (src / f"r{i}.json").write_text(traj.to_json())
    cfg = tmp_path / "settings.json"
    cfg.write_text(json.dumps({"judge": {"transport_retries": 1, "backoff_initial_s": 0.1, "backoff_max_s": 0.5,
                                         "timeout_s": 30, "image_max_side": 224}}))
    out = tmp_path / "results.jsonl"

    proc = _score_dataset(src, out, engine, cfg)
    deadline = time.monotonic() + 300
    while not any(r["status"] == "scored" for r in _records(out)):
        if proc.poll() is not None:
            reasons = [r["reason"] or "" for r in _records(out)]
            gaps = {GAP_NO_CRITERION[1] if GAP_NO_CRITERION[0] in x else GAP_FLOAT_DIGITS
                    if x.startswith("JudgeTruncatedError") and not floats_bounded() else None for x in reasons}
            if reasons and None not in gaps:
                pytest.xfail("known gaps: " + " | ".join(sorted(gaps)))
            pytest.fail(f"scoring ended before anything was scored:\n{proc.stdout.read()[-3000:]}")
        assert time.monotonic() < deadline, "nothing scored within 300 s"
        time.sleep(0.5)
    engine.kill()
    before = {r["id"]: r for r in _records(out) if r["status"] == "scored"}
    stdout, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, stdout[-3000:]

    recs = _records(out)
    ids = [r["id"] for r in recs]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 5, ids  # each rollout exactly once
    for rid, rec in before.items():  # finished work survived the crash byte for byte
        assert next(r for r in recs if r["id"] == rid) == rec
    unscored = [r for r in recs if r["status"] == "unscored"]
    assert unscored, "the crash should have left some rollouts unscored"
    for r in unscored:
        assert r["result"] is None and r["reason"].startswith(("JudgeUnavailableError", "JudgeError"))
    assert any(r["reason"].startswith("JudgeUnavailableError") for r in unscored)

    # A rerun against a fresh server retries only what was not scored.
    engine.ensure_running()
    rerun = _score_dataset(src, out, engine, cfg)
    stdout, _ = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, stdout[-3000:]
    scored_first = {r["id"] for r in recs if r["status"] == "scored"}
    assert f"already done {len(scored_first)}" in stdout
    new = _records(out)[len(recs):]
    assert {r["id"] for r in new} == {r["id"] for r in unscored}
