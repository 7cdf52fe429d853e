"""Peak RSS of offline `score` on a run of N near-limit screenshots (SIDE x SIDE RGBA PNGs), for
tests/judge/test_pixels.py and the issue note:

    python tests/judge/pixel_memory.py /tmp/run 16 6300   # prints {"exit", "base_mb", "peak_mb", "s"}

The run is written first (outside the measurement); the judge is the echo judge on loopback.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

WRITE = """
import sys
from pathlib import Path
from PIL import Image, ImageDraw
from verifier.trajectory import Screenshot, Step, Task, Trajectory
root, n, side = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
root.mkdir(parents=True, exist_ok=True)
for i in range(n):
    img = Image.new("RGBA", (side, side), (255, 255, 255, 255))
    d = ImageDraw.Draw(img)
    d.rectangle([i * 100, i * 100, i * 100 + 500, i * 100 + 300], fill=(200, 30, 30, 255))
    d.text((50, 50), f"page {i}", fill=(0, 0, 0, 255))
    img.save(root / f"s{i}.png", compress_level=6)
steps = [Step(index=i + 1, action="click", arguments={"x": i}) for i in range(n - 1)]
shots = [Screenshot.from_path(f"s{i}.png", step=min(i + 1, n - 1), timing="before" if i < n - 1 else "after")
         for i in range(n)]
traj = Trajectory(task=Task(id="big", instruction="Find the price of the red kettle"), steps=steps,
                  screenshots=shots, final_answer="$5")
(root / "trajectory.json").write_text(traj.to_json())
"""


def main(argv: list[str]) -> int:
    root, n, side = Path(argv[0]), argv[1], argv[2]
    if not (root / "trajectory.json").exists():  # written in a child: its memory is not measured
        subprocess.run([sys.executable, "-c", WRITE, str(root), n, side], check=True)
    from cua_verifier.cli import main as cli
    from reward.echo_judge import EchoJudgeServer

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = root / "o.jsonl"
    out.unlink(missing_ok=True)
    started = time.time()
    with EchoJudgeServer() as server:
        code = cli(["score", str(root / "trajectory.json"), "--out", str(out), "--no-progress",
                    "--judge-url", server.url, "--model", "judge"])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"exit": code, "base_mb": base // 1024, "peak_mb": peak // 1024,
                      "s": round(time.time() - started, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
