"""Sources for the distributed-scoring tests: native JSONL of G rollouts per task."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from serving.perf.loadtest import trajectory


def write_source(path: Path, *, tasks: int, per_task: int) -> Path:
    """`tasks * per_task` distinct rollouts, interleaved by task (so a task's rows are not adjacent)."""
    lines = [trajectory(k, f"task-{k % tasks}").to_json() for k in range(tasks * per_task)]
    path.write_text("\n".join(lines) + "\n")
    return path


def judge_settings(url: str) -> dict:
    return {"base_urls": [url], "model": "echo", "backoff_initial_s": 0.05, "backoff_jitter_s": 0.05}


#: Writes ROWS rollouts of TASKS tasks, each with SHOTS real 1440x900 captures inline (data URLs).
_WRITE_INLINE = """
import sys
from verifier.perf.shots import write_rows
write_rows(sys.argv[1], *map(int, sys.argv[2:]))
"""

#: The loopback judge in a process of its own (its request bodies must not count in the test's RSS):
#: prints its URL, then on a line of stdin its replies per schema.
_JUDGE = """
import json, sys
from serving.perf.loadtest import LoopbackJudge
with LoopbackJudge(max_body_bytes=1 << 30) as judge:
    print(judge.url, flush=True)
    sys.stdin.readline()
    print(json.dumps(dict(judge.by_schema)), flush=True)
"""


def write_inline_source(path: Path, *, rows: int, tasks: int, shots: int) -> Path:
    """Rows of several MB each, written by a child process (this one's heap stays as it was)."""
    subprocess.run([sys.executable, "-c", _WRITE_INLINE, str(path), str(rows), str(tasks), str(shots)],
                   check=True, env=_env(), timeout=300)
    return path


class JudgeProcess:
    """`LoopbackJudge` in a child process; `by_schema()` ends it and returns its counts."""

    def __enter__(self) -> JudgeProcess:  # noqa: PYI034 - a final helper class
        self.proc = subprocess.Popen([sys.executable, "-c", _JUDGE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=_env())
        self.url = self.proc.stdout.readline().strip()  # type: ignore[union-attr]
        return self

    def by_schema(self) -> dict[str, int]:
        out, _ = self.proc.communicate("\n", timeout=60)
        return json.loads(out.strip().splitlines()[-1])

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
