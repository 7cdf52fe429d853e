"""`cua-verifier inspect PATH`: what the verifier will see, before any judge call.

The first command a user runs on their own data: it loads the trajectory with the same loaders as
`score`, and prints the task, the steps (action, short arguments, thought excerpt, URL, error), the
screenshots (step, before/after, size, hash prefix, duplicates) and the loader's warnings. Bad input
exits with status 2 and the loader's message (file, line, field). `--write-native` converts any
supported input to the project's own format (see examples/README.md).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from verifier.errors import ConfigError, TrajectoryError
from verifier.loaders import load_trajectories
from verifier.trajectory import AGENT_CLAIM, ENV_SCORE, FRAMEWORK_JUDGE, Screenshot, Trajectory

from ._options import OUTSIDE_HELP, add_task_args, single_run, task_options
from ._sources import display_path, iter_path

FORMAT_CHOICES = ["auto", "fara", "om2w", "native", "cuavb-parquet", "browser-use", "browsergym", "osworld"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("inspect", help="summarise a trajectory (any supported format)",
                              description=__doc__.split("\n")[0])
    p.add_argument("path", help="trajectory folder, .json/.jsonl (native) or .parquet (CUAVerifierBench)")
    p.add_argument("--format", default="auto", choices=FORMAT_CHOICES, help="input format (default: auto)")
    p.add_argument("--json", action="store_true", help="print one JSON summary per trajectory (JSON lines)")
    p.add_argument("--limit", type=int, default=20, help="at most this many trajectories from a multi-"
                   "trajectory file (default 20; 0 = all)")
    p.add_argument("--width", type=int, default=80, help="cut texts to this many characters (0 = no cut)")
    p.add_argument("--write-native", metavar="OUT.jsonl", default=None,
                   help="also convert to the native format: one JSON record per line (screenshots by path)")
    p.add_argument("--allow-outside-screenshots", action="store_true", help=OUTSIDE_HELP)
    add_task_args(p)
    p.add_argument("--embed-images", action="store_true",
                   help="with --write-native: embed screenshots as data URLs (a self-contained file)")
    p.set_defaults(func=run)


def _loaders(args: argparse.Namespace) -> Iterator[Callable[[], Trajectory]]:
    """One loader per trajectory. With --format auto, sources are read as `score` reads them (a
    folder of trajectories works, and a bad file or JSONL line fails alone, issue 14)."""
    outside = getattr(args, "allow_outside_screenshots", False)
    options = task_options(args)
    if args.format == "auto":
        items = iter_path(Path(args.path), display_path, allow_outside_screenshots=outside, task_options=options)
        for _rid, _source, thunk in single_run(items, options):
            yield thunk
    else:
        for traj in load_trajectories(args.path, format=args.format, allow_outside_screenshots=outside, **options):
            yield _given(traj)


def _given(traj: Trajectory) -> Callable[[], Trajectory]:
    return lambda: traj


def run(args: argparse.Namespace) -> int:
    out, failed, n = None, 0, 0
    try:
        if args.format == "cuavb-parquet" or str(args.path).lower().endswith(".parquet"):
            from ._preflight import require

            try:
                require("reading a .parquet file", "bench", "pyarrow")
            except ConfigError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
        loaders = _loaders(args)
        if args.limit > 0:
            loaders = islice(loaders, args.limit)
        if args.write_native:
            out = open(args.write_native, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        written = 0
        for load in loaders:
            try:
                traj = load()
                info = summarise(traj)
            except TrajectoryError as exc:  # this trajectory only: say so, show the others
                print(f"error: {exc}", file=sys.stderr)
                failed += 1
                continue
            if out is not None:
                out.write(to_native(traj, embed=args.embed_images) + "\n")
                written += 1
            if args.json:
                print(json.dumps(info, ensure_ascii=False))
            else:
                if n:
                    print("\n" + "=" * 80 + "\n")
                print(render(info, width=args.width))
            n += 1
    except (TrajectoryError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot write {args.write_native}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    finally:
        if out is not None:
            out.close()
    if out is not None:  # on stderr: stdout stays the summary (JSON lines with --json)
        shots = "screenshots embedded" if args.embed_images else "screenshots by path"
        print(f"wrote {written} trajectory record(s) in the native format to {args.write_native} ({shots})",
              file=sys.stderr)
    if not n and not failed:
        print(f"error: {args.path}: holds no trajectory", file=sys.stderr)
        return 2
    return 2 if failed else 0


def to_native(traj: Trajectory, *, embed: bool = False) -> str:
    """One native JSON line; with `embed`, every screenshot becomes a data URL (no file needed)."""
    if embed:
        shots = [Screenshot(step=s.step, timing=s.timing, data_url=s.as_data_url()) for s in traj.screenshots]
        traj = traj.model_copy(update={"screenshots": shots})
    return traj.to_json()


def summarise(traj: Trajectory) -> dict[str, Any]:
    """Plain-data summary (the `--json` output); raises `ScreenshotError` on an unreadable image."""
    first_seen: dict[str, int] = {}
    shots = []
    for k, shot in enumerate(traj.screenshots, start=1):
        w, h = shot.size()
        sha = shot.sha256
        shots.append({"number": k, "step": shot.step, "timing": shot.timing, "width": w, "height": h,
                      "bytes": len(shot.bytes()), "sha256": sha, "duplicate_of": first_seen.get(sha),
                      "source": shot.describe()})
        first_seen.setdefault(sha, k)
    return {
        "source": traj.source_path, "source_format": traj.source_format,
        "task": traj.task.model_dump(), "status": traj.status.value, "final_answer": traj.final_answer,
        "steps": [s.model_dump() for s in traj.steps], "screenshots": shots,
        "distinct_screenshots": len(first_seen), "warnings": list(traj.load_warnings),
        "agent_claim": traj.other_verdicts().get(AGENT_CLAIM), "env_score": traj.other_verdicts().get(ENV_SCORE),
        "framework_judge": traj.other_verdicts().get(FRAMEWORK_JUDGE),
    }


def other_verdict_lines(info: dict[str, Any]) -> list[str]:
    """The agent's claim and the environment's score, labelled as theirs: neither is the verifier's."""
    lines = []
    claim, env = info.get("agent_claim"), info.get("env_score")
    if claim:
        said = {True: "success", False: "failure", None: "stopped without saying"}[claim["success"]]
        lines.append(f"Agent claim  {said}  (the agent's own word; {claim['source']})")
    if env:
        lines.append(f"Env score    {env['score']:g} ({'success' if env['success'] else 'not success'} by the "
                     f"environment's checker; {env['source']}; not the verifier's verdict, and not always "
                     "task success)")
    if judged := info.get("framework_judge"):
        said = {True: "success", False: "failure", None: "no verdict"}[judged.get("verdict")]
        why = f"; failure reason: {judged['failure_reason']}" if judged.get("failure_reason") else ""
        lines.append(f"Agent's judge {said}  (the agent framework's own LLM judge; {judged['source']}{why}; "
                     "never shown to the verifier's judge)")
    return lines


def render(info: dict[str, Any], *, width: int = 80) -> str:
    def cut(text: Any, n: int = width) -> str:
        s = " ".join(str(text).split())
        return s if n <= 0 or len(s) <= n else s[: n - 1] + "…"

    task = info["task"]
    answer = info["final_answer"]
    lines = [
        f"Trajectory   {info['source']}  [{info['source_format']}]",
        f"Task         {task['id']}",
        f"Instruction  {cut(task['instruction'], 0)}",
        f"Start URL    {task['start_url'] or '(none)'}",
        f"Status       {info['status']}",
        f"Final answer {cut(answer, 0) if answer is not None else '(no answer)'}",
    ]
    lines += other_verdict_lines(info)
    if info["warnings"]:
        lines.append("Warnings")
        lines += [f"  ! {w}" for w in info["warnings"]]
    lines.append(f"\nSteps ({len(info['steps'])})")
    for s in info["steps"]:
        args = " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in s["arguments"].items())
        lines.append(f"  {s['index']:>3}. {s['action']}({cut(args, width - 20 if width else 0)})")
        if s["thought"]:
            lines.append(f"       thought: {cut(s['thought'], width - 16 if width else 0)}")
        if s["url"]:
            lines.append(f"       url: {cut(s['url'], width - 12 if width else 0)}")
        if s["error"]:
            lines.append(f"       ERROR: {cut(s['error'])}")
    shots = info["screenshots"]
    lines.append(f"\nScreenshots ({len(shots)}, {info['distinct_screenshots']} distinct)")
    for sh in shots:
        dup = f"  duplicate of #{sh['duplicate_of']}" if sh["duplicate_of"] else ""
        lines.append(f"  {sh['number']:>3}. step {sh['step']:<3} {sh['timing']:<6} {sh['width']}x{sh['height']:<5} "
                     f"{sh['bytes'] / 1024:8.1f} KB  {sh['sha256'][:12]}{dup}")
    return "\n".join(lines)
