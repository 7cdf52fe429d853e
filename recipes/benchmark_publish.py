"""What reading screenshots undecoded saves, and what publishing the scored dataset costs.

    python recipes/benchmark_publish.py --rows 200 --shots 3 --size 1280x720

Builds a parquet of benchmark-shaped rows (a list of `datasets.Image` screenshots each), then
prints: the time to turn every row into a `Trajectory` with the screenshots decoded by `datasets`
(PIL) and re-encoded by the loader (the old path) versus read undecoded (`Image(decode=False)`, the
stored bytes), and the time `--publish-dir` takes to write the scored copy (results joined at the
Arrow level; no image decoded).
"""
from __future__ import annotations

import argparse
import io
import json
import random
import tempfile
import time
from pathlib import Path


def _png(rng: random.Random, w: int, h: int) -> bytes:
    from PIL import Image

    img = Image.new("RGB", (w, h), tuple(rng.randrange(256) for _ in range(3)))
    for _ in range(200):  # some detail, so the PNG is not trivially small
        x, y = rng.randrange(w - 40), rng.randrange(h - 20)
        img.paste(tuple(rng.randrange(256) for _ in range(3)), (x, y, x + 40, y + 20))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    import datasets

    from cua_verifier.cli import build_parser
    from verifier.loaders import load_cuavb_row
    from verifier.publish.dataset import publish
    from verifier.records import ScoreRecord
    from verifier.sources.rows import load_rows

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=200)
    p.add_argument("--shots", type=int, default=3)
    p.add_argument("--size", default="1280x720")
    a = p.parse_args(argv)
    w, h = (int(v) for v in a.size.split("x"))
    datasets.disable_progress_bars()
    rng = random.Random(0)
    shots = [_png(rng, w, h) for _ in range(8)]
    log = "\n".join(json.dumps({"action": "click", "arguments": {"x": i}, "url": "https://a.example"})
                    for i in range(a.shots - 1))
    feats = datasets.Features({"task_id": datasets.Value("string"), "instruction": datasets.Value("string"),
                               "web_surfer_log": datasets.Value("string"),
                               "screenshots": datasets.List(datasets.Image())})
    rows = [{"task_id": f"t{k}", "instruction": "find it", "web_surfer_log": log,
             "screenshots": [{"bytes": shots[(k + j) % 8], "path": None} for j in range(a.shots)]}
            for k in range(a.rows)]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "rollouts.parquet"
        datasets.Dataset.from_list(rows, features=feats).to_parquet(str(src))
        mb = src.stat().st_size / 2**20
        figures = {}
        for label, undecoded in (("decoded + re-encoded", False), ("undecoded (stored bytes)", True)):
            t0 = time.perf_counter()  # the cast to decode=False (an Arrow copy) is counted too
            ds = load_rows(str(src), split="train", name=None, streaming=False, undecoded=undecoded)
            n = sum(len(load_cuavb_row(r, source="bench").screenshots) for r in ds)
            figures[label] = time.perf_counter() - t0
            print(f"read {a.rows} rows ({n} screenshots {a.size}, {mb:.1f} MiB) {label}: {figures[label]:.2f} s")
        args = build_parser().parse_args(["score-dataset", str(src), "--out", str(Path(tmp) / "o.jsonl"),
                                          "--publish-dir", str(Path(tmp) / "pub"), "--no-progress"])
        records = [ScoreRecord(id=f"t{k}", status="scored", result={"task_id": f"t{k}", "process_score": 0.5})
                   for k in range(a.rows)]
        t0 = time.perf_counter()
        report = publish(args, None, records)
        print(f"publish {report['rows']} rows to --publish-dir: {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
