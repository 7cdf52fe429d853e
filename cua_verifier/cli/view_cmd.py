"""`cua-verifier view RESULTS [--trajectories PATH] --out DIR`: results JSONL -> static HTML site.

The site opens from disk (DIR/index.html): an index of every rollout (sortable, filterable, with a
summary) and one page per rollout (rubric, relevance heat-map, evidence screenshots, diagnosis on a
step timeline, votes, cost, provenance). Screenshots are read from the trajectories the records
name; pass --trajectories when the results were written elsewhere.

Exit status: 0 site written, 2 bad usage (no such results file).
"""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "view",
        help="static HTML site of a results JSONL (open DIR/index.html)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", metavar="RESULTS",
                   help="results JSONL written by score / score-dataset, or a rubric file (a page per task)")
    p.add_argument(
        "--trajectories",
        action="append",
        default=[],
        metavar="PATH",
        help="trajectory or folder of trajectories to take screenshots from (repeatable)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output folder for the site")
    p.add_argument("--title", default=None, help="title of the index page")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from verifier.viewer import build_site
    from verifier.viewer.rubric_site import build_rubric_site, is_rubric_file

    try:
        if is_rubric_file(args.results):  # a rubric file (`cua-verifier rubrics`): a page per task
            stats = build_rubric_site(args.results, args.out, title=args.title)
            print(f"{stats.rollouts} task rubrics, {stats.pages} pages -> {stats.out / 'index.html'}")
            return 0
        stats = build_site(args.results, args.out, trajectories=args.trajectories, title=args.title)
    except FileNotFoundError as exc:
        print(f"error: {exc}")
        return 2
    print(
        f"{stats.rollouts} rollouts, {stats.pages} pages, {stats.images} image files in {stats.seconds:.1f} s "
        f"-> {stats.out / 'index.html'}"
    )
    for err in stats.errors:
        print(f"  page with an error: {err}")
    return 0
