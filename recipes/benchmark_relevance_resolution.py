"""What the relevance fan-out's screenshot size saves: bytes sent and image tokens, per setting.

Every screenshot goes to relevance once, so its size sets that stage's cost. For each setting of
`JudgeConfig.relevance_image_max_side` this encodes the real 1440x900 captures as the judge client
would (`ImageEncoder`), and counts their image tokens with the Qwen2-VL image processor from
transformers (patch 14, 2x2 merge, its default pixel bounds, or --max-pixels: the CPU demo engine
serves with 50176, where every setting costs the same tokens). Figures are per M = 50 fan-out
(37 distinct screenshots: every fourth repeats the previous one), with the CPU time of the resize.

    python recipes/benchmark_relevance_resolution.py
    python recipes/benchmark_relevance_resolution.py --max-pixels 50176
"""
from __future__ import annotations

import argparse
import base64
import io
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PIL import Image

from verifier.judge.images import ImageEncoder
from verifier.perf.shots import describe, source_pngs, trajectory


def image_tokens(processor: object, data: bytes) -> int:
    """Tokens the Qwen2-VL processor gives this image: grid t*h*w patches over the 2x2 merge."""
    with Image.open(io.BytesIO(data)) as img:
        out = processor(images=[img.convert("RGB")], return_tensors="np")  # type: ignore[operator]
    t, h, w = out["image_grid_thw"][0]
    return int(t * h * w) // 4


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-m", type=int, default=50)
    p.add_argument("--sides", default="none,1024,768,512", help="settings to measure (none = full size)")
    p.add_argument("--max-pixels", type=int, default=None, help="the processor's pixel bound (its default)")
    a = p.parse_args(argv)
    from transformers import Qwen2VLImageProcessorPil

    # size: the processor's pixel bounds (longest_edge is its max_pixels, shortest_edge its min_pixels)
    kw = {"size": {"longest_edge": a.max_pixels, "shortest_edge": 3136}} if a.max_pixels else {}
    processor = Qwen2VLImageProcessorPil(**kw)
    sources = source_pngs()
    shots = {s.sha256: s for s in trajectory(a.m, sources, run="relevance").screenshots}
    print(f"{describe(sources)}; M = {a.m}: {len(shots)} distinct screenshots; "
          f"processor max_pixels {processor.size.longest_edge}; load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"{'relevance_image_max_side':>24} {'MB sent':>8} {'image tokens':>13} {'resize CPU s':>13}")
    full = None
    for side in a.sides.split(","):
        max_side = None if side == "none" else int(side)
        enc = ImageEncoder(max_side=max_side if max_side else 1280 * 32, max_pixels=None, cache_size=0)
        t0 = time.process_time()
        encoded = [enc.encode(s) for s in shots.values()]
        cpu = time.process_time() - t0
        sent = sum(e.nbytes for e in encoded)
        tokens = 0
        for e, s in zip(encoded, shots.values()):
            data = s.bytes() if e.passed_through else base64.b64decode(e.url.split(",", 1)[1])
            tokens += image_tokens(processor, data)
        full = full or (sent, tokens)
        print(f"{side:>24} {sent / 1e6:8.1f} {tokens:13d} {cpu:13.2f}   "
              f"({100 * sent / full[0]:.0f}% of the bytes, {100 * tokens / full[1]:.0f}% of the tokens)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
