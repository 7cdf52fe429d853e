"""The judge server dies in the middle of an offline scoring run (`score-dataset`).

Expected: the run finishes on its own; records finished before the crash stay in the log untouched;
every rollout after it is `unscored` with a transport-error reason (never a zero score); a rerun
against a fresh server skips the scored ids and retries only the unscored ones. (With random
weights a rollout finished before the crash may itself be unscored for a verdict-related reason;
the checks hold either way.) The server is SIGKILLed as a
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

from pipeline_support import synthetic_trajectory

pytestmark = pytest.mark.engine

TASKS = ["Find a dog-friendly trail near Boulder.", "Book a table for two at 7pm.",
         "Compare the prices of two laptops.", "Subscribe to the newsletter with a test address.",
         "Find the opening hours of the city library.", "Add a blue T-shirt to the cart.",
         "Look up tomorrow's weather in Oslo.", "Rename the shared folder to Reports."]
N_ROLLOUTS = 3


def _records(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip().endswith("}")]


def _score_dataset(src: Path, out: Path, engine, cfg: Path, log: Path, concurrency: int) -> subprocess.Popen:
    """Run `cua-verifier score-dataset` in a child process; its output goes to `log` (no pipe to fill)."""
    argv = [sys.executable, "-c", "import sys; from cua_verifier.cli import main; sys.exit(main(sys.argv[1:]))",
            "score-dataset", str(src), "--out", str(out), "--judge-url", engine.base_url,
            "--model", engine.model, "--config", str(cfg), "--concurrency", str(concurrency), "--no-progress"]
    env = {**os.environ, "CUA_JUDGE_API_KEY": engine.api_key}
    with open(log, "w") as fh:
        return subprocess.Popen(argv, env=env, stdout=fh, stderr=subprocess.STDOUT)


def test_server_killed_mid_run(engine, tmp_path):
    src = tmp_path / "rollouts"
    src.mkdir()
    for i, task in enumerate(TASKS[:N_ROLLOUTS]):
        traj = synthetic_trajectory(3, task_id=f"t{i}", seed=i)
        traj = traj.model_copy(update={"task": traj.task.model_copy(update={"instruction": task})})
        (src / f"r{i}.json").write_text(traj.to_json())
    cfg = tmp_path / "settings.json"
    cfg.write_text(json.dumps({"judge": {"transport_retries": 1, "backoff_initial_s": 0.1, "backoff_max_s": 0.5,
                                         "timeout_s": 30, "image_max_side": 224}}))
    out = tmp_path / "results.jsonl"

    log1, log2 = tmp_path / "run1.log", tmp_path / "run2.log"
    proc = _score_dataset(src, out, engine, cfg, log1, concurrency=2)  # one rollout left to fail
    deadline = time.monotonic() + 300
    while not _records(out):  # wait until the first rollout is finished (scored or not)
        assert proc.poll() is None, f"scoring ended before writing anything:\n{log1.read_text()[-3000:]}"
        assert time.monotonic() < deadline, "no rollout finished within 300 s"
        time.sleep(0.2)
    engine.kill()
    before = _records(out)  # everything finished before the crash
    assert proc.wait(timeout=300) == 3, log1.read_text()[-3000:]  # 3: some rollouts unscored

    recs = _records(out)
    ids = [r["id"] for r in recs]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == N_ROLLOUTS, ids  # each rollout exactly once
    assert recs[:len(before)] == before  # finished work survived the crash untouched
    # After the crash: failures are typed transport errors, never scores. (A rollout whose last reply
    # arrived just before the kill may still be written, scored, after it.)
    failed_after = [r for r in recs[len(before):] if r["status"] == "unscored"]
    assert failed_after, "the crash should have left rollouts to fail"
    for r in failed_after:  # an outage, or a result that fell back in a none_if_degraded stage
        degraded = r["reason"].startswith("DegradedResult")
        assert degraded or r["reason"].startswith("JudgeUnavailableError"), r["reason"]
        assert (r["result"] is not None) == degraded, r["reason"]
    for r in recs:  # a scored record always carries its result; an unscored one only when degraded
        assert (r["status"] == "scored") <= (r["result"] is not None)

    # A rerun against a fresh server skips what was scored and retries only the unscored rollouts.
    engine.ensure_running()
    rerun = _score_dataset(src, out, engine, cfg, log2, concurrency=N_ROLLOUTS)
    assert rerun.wait(timeout=600) in (0, 3), log2.read_text()[-3000:]  # random weights: may degrade
    stdout = log2.read_text()
    scored_first = {r["id"] for r in recs if r["status"] == "scored"}
    assert f"already done {len(scored_first)}" in stdout, stdout[-2000:]
    first = {r["id"]: r for r in recs}
    final = {}
    for r in _records(out):  # the log may be rewritten (deduplicated) at export: last record per id wins
        final[r["id"]] = r
    assert set(final) == set(ids)
    for rid in ids:
        if rid in scored_first:
            assert final[rid] == first[rid]  # not re-run
        else:
            assert final[rid]["scored_at"] > first[rid]["scored_at"]  # retried
