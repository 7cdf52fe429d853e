"""Benchmark: weight and build time of the page of a long rollout (prints figures, asserts nothing).

    python -m tests.viewer.page_weight [--shots 50] [--images DIR]

Screenshots are made distinct (a step number drawn on each) from the real screenshots found under
DIR (default: the shared data's trajectories, tests/suite_env.py, when present), else synthetic 1280x800 pages.
"""
from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path

from PIL import Image, ImageDraw

from tests.suite_env import shared_data_dir
from verifier.viewer import build_site

from .helpers import make_trajectory, rich_result, write_results

SHARED = shared_data_dir() / "trajectories"  # $CUA_SHARED_DATA, else ../shared/data


def real_trajectory(folder: Path, n: int, sources: list[Path]) -> Path:
    make_trajectory(folder, n)  # steps and layout; screenshots replaced below
    for k in range(n):
        with Image.open(sources[k % len(sources)]) as im:
            im = im.convert("RGB")
            ImageDraw.Draw(im).text((10, 10), f"step {k}", fill=(255, 0, 0))
            im.save(folder / f"shot_{k:02d}.png", "PNG")
    return folder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shots", type=int, default=50)
    ap.add_argument("--images", type=Path, default=SHARED)
    args = ap.parse_args()
    sources = sorted(p for p in args.images.rglob("*") if p.suffix.lower() in (".png", ".jpg", ".jpeg"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        folder = tmp / "long"
        if sources:
            real_trajectory(folder, args.shots, sources)
        else:
            make_trajectory(folder, args.shots)
        src = str(folder / "trajectory.json")
        results = write_results(tmp / "r.jsonl", [("long#0", src, rich_result(src, "long", args.shots), None)])
        t0 = time.perf_counter()
        stats = build_site(results, tmp / "site")
        wall = time.perf_counter() - t0
        html = (tmp / "site" / stats.links["long#0"]).read_text()
        thumbs = set(re.findall(r'<img src="\.\./(img/[^"]+)"', html))
        thumb_bytes = sum((tmp / "site" / t).stat().st_size for t in thumbs)
        full = [p for p in (tmp / "site" / "img").iterdir() if not p.name.endswith("_t.jpg")]
        print(json.dumps({
            "screenshots": args.shots, "source": "real screenshots" if sources else "synthetic",
            "html_kB": round(len(html.encode()) / 1e3, 1), "thumbnails": len(thumbs),
            "thumbnails_kB": round(thumb_bytes / 1e3, 1),
            "page_weight_kB": round((len(html.encode()) + thumb_bytes) / 1e3, 1),
            "full_images_kB_loaded_on_click_only": round(sum(p.stat().st_size for p in full) / 1e3, 1),
            "build_s": round(wall, 2)}, indent=1))


if __name__ == "__main__":
    main()
