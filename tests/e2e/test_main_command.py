"""The README's main command on a CPU-only machine with no judge configured, for real.

`cua-verifier score examples/trajectories --out results.jsonl` must start the CPU demo judge
(a real vLLM server with the random-weight tiny model), score the bundled examples, say plainly
that the verdicts are meaningless, and stop the server it started.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_support import typed_judge_failure

from serving.demo import DEMO_WARNING

pytestmark = pytest.mark.engine

REPO = Path(__file__).resolve().parents[2]


def test_readme_main_command_scores_the_examples_with_the_demo_judge(judge_venv: Path, tiny_model: Path,
                                                                     tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUA_JUDGE_URL", "CUA_JUDGE_MODEL", "CUA_JUDGE_API_KEY", "CUA_VERIFIER_CONFIG")}
    env["CUA_JUDGE_VENV"] = str(judge_venv)
    env["CUA_CACHE_DIR"] = str(tmp_path / "cache")  # the model is (re)built like on a fresh machine
    out = tmp_path / "results.jsonl"
    cli = Path(sys.executable).with_name("cua-verifier")
    proc = subprocess.run([str(cli), "score", "examples/trajectories", "--out", str(out), "--no-progress"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode in (0, 3), proc.stderr[-3000:]
    assert proc.stderr.count(DEMO_WARNING) == 2, proc.stderr[-3000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 3
    for rec in records:  # random weights: a verdict or a typed judge failure, never a crash
        assert rec["status"] == "scored" or typed_judge_failure(rec["reason"]), rec["reason"]
        assert (rec["result"] is not None) == (rec["status"] == "scored" or rec["reason"].startswith("Degraded"))
    assert any(rec["status"] == "scored" for rec in records), [r["reason"] for r in records]
    scored = next(r for r in records if r["status"] == "scored")["result"]
    assert scored["usage"]["calls"] > 0 and scored["models"]
    # the demo server it started is gone
    ps = subprocess.run(["pgrep", "-f", str(tmp_path / "cache")], capture_output=True, text=True, check=False)
    assert ps.stdout.strip() == "", ps.stdout

