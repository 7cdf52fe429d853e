"""`cua-verifier experiment run` and `report` end to end against the real CPU judge (tiny
random-weight Qwen2-VL behind vLLM): two arms (the packaged prompts and an outcome overlay), two
repeats, two calibration cases (issue 37 tests).

Random weights make every verdict meaningless, so this checks the plumbing through a real server:
every (arm, repeat, case) has a record, the arms shared the calls of the stages the overlay left
unchanged (and said so), each arm's results record its own outcome prompt hash, and the report is
written with a decision for the candidate.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from verifier.prompts import prompts_dir

pytestmark = pytest.mark.engine

REPO = Path(__file__).resolve().parents[2]


def test_experiment_on_the_cpu_engine(engine, tmp_path: Path) -> None:
    overlay = tmp_path / "strict" / "outcome.system.j2"
    overlay.parent.mkdir()
    source = (prompts_dir() / "outcome.system.j2").read_text(encoding="utf-8")
    overlay.write_text(source.replace("version: ", "version: 99", 1).rstrip() +
                       "\n- A run that shows no final deliverable is a failure.\n", encoding="utf-8")
    spec = {"name": "engine", "repeats": 2, "concurrency": 2,
            "labelled": {"calibration": {"suite": str(REPO / "examples" / "calibration"), "only": ["O2"]}},
            "judge": {"base_urls": [engine.base_url], "model": engine.model, "api_key_env": "CUA_E2E_JUDGE_KEY",
                      "image_max_side": 224, "timeout_s": 120, "transport_retries": 1,
                      "sampling": {"max_tokens": 8192}},
            "baseline": {"name": "packaged"}, "arms": [{"name": "strict", "prompts": "strict"}]}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    out = tmp_path / "out"
    env = {**os.environ, "CUA_E2E_JUDGE_KEY": engine.api_key}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "cua_verifier", "experiment", "run", str(path), "--out", str(out),
                           "--no-demo"], check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    print(f"\n[experiment] 2 arms x 2 repeats x 2 cases in {time.monotonic() - t0:.0f}s, exit {proc.returncode}")
    assert proc.returncode in (0, 3), proc.stderr[-3000:]
    assert "judge calls saved by sharing" in proc.stdout
    for arm in ("packaged", "strict"):
        for r in range(2):
            ids = {json.loads(x)["id"] for x in (out / "arms" / arm / f"r{r}.jsonl").read_text().splitlines()}
            assert ids == {"o2-substitution-size", "o2-trivially-equivalent-unit"}
    runs = [json.loads(x) for x in (out / "runs.jsonl").read_text().splitlines()]
    assert sum(a["calls_shared"] for a in runs[-1]["arms"].values()) > 0
    mine = hashlib.sha256(overlay.read_bytes()).hexdigest()
    for line in (out / "arms" / "strict" / "r0.jsonl").read_text().splitlines():
        result = json.loads(line)["result"]
        if result is not None:
            assert {p["id"]: p["sha256"] for p in result["prompts"]}.get("outcome") == mine
    report = json.loads((out / "report.json").read_text())
    assert report["arms"][1]["decision"]["verdict"] in ("accept", "reject", "inconclusive")
    assert (out / "report.html").is_file()
