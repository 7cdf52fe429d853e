"""`cua-verifier experiment run SPEC.yaml --out DIR` and `cua-verifier experiment report DIR`.

The paper's design loop as a command (issue 37): every arm of the spec (a baseline and candidate
prompt overlays, config overrides or judges) is scored R times on the same labelled items; the
report compares each candidate with the baseline against the run-to-run noise and says accept,
reject or inconclusive, with the flips to read. See docs/experiment.md.

`run` checks everything before the first judge call (spec, overlays, configs, labels, fixed
rubrics, identical arms), is resumable and exactly once like `score` (rerun the same command after
an interruption), and prints the judge calls saved by sharing unchanged stages between arms.

Exit status: 0 every verification scored, 3 some unscored (rerun to retry them), 2 bad usage,
spec or input, an unreachable judge or an output folder in use; 128 + N after signal N.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from verifier.errors import ConfigError, JudgeUnavailableError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("experiment", help="compare prompt/config/judge variants on labelled data "
                                                 "against run-to-run noise (accept / reject / inconclusive)",
                              description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="experiment_command", required=True)
    r = sub.add_parser("run", help="score every arm R times on the labelled set (resumable)")
    r.add_argument("spec", metavar="SPEC", help="experiment spec (YAML or JSON; docs/experiment.md)")
    r.add_argument("--out", required=True, help="output folder (rerun the same command to resume)")
    r.add_argument("--fixed-rubrics", metavar="FILE",
                   help="JSONL of {task_id, rubric}: every arm scores against these rubrics (isolates the scorer)")
    r.add_argument("--repeats", type=int, help="R, repeats per arm (wins over the spec; default 3)")
    r.add_argument("--concurrency", type=int, help="verifications in flight per arm (wins over the spec)")
    r.add_argument("--no-demo", action="store_true",
                   help="fail instead of starting the CPU demo judge when no judge is configured")
    r.add_argument("--no-report", action="store_true", help="do not write the report at the end")
    r.add_argument("--ledger", metavar="FILE", help="ledger a completed experiment is appended to "
                                                    "(default: ledger.jsonl beside the --out folder)")
    r.set_defaults(func=run)
    rep = sub.add_parser("report", help="agreement, paired differences, decisions, flips and cost per arm")
    rep.add_argument("dir", metavar="DIR", nargs="?", help="an `experiment run --out` folder")
    rep.add_argument("--ledger", metavar="FILE", help="show the ledger: kappa and FPR across accepted "
                                                      "iterations (text, and FILE with .html)")
    add_report_args(rep)
    rep.set_defaults(func=report)


def add_report_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", metavar="PATH", help="JSON report (default: DIR/report.json)")
    p.add_argument("--html", metavar="PATH", help="HTML report (default: DIR/report.html)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--no-pages", action="store_true", help="do not build the rollout pages the flips link to")


def _prepare(args: argparse.Namespace) -> tuple[Any, list, list]:
    from verifier.experiment import load_items, load_spec, resolve_arms

    spec = load_spec(args.spec)
    updates = {k: v for k, v in (("repeats", args.repeats), ("concurrency", args.concurrency)) if v is not None}
    if updates:
        spec = spec.model_validate({**spec.model_dump(), **updates, "folder": spec.folder})
    arms = resolve_arms(spec)
    items = load_items(spec, args.fixed_rubrics)
    return spec, arms, items


def _judge_factory(args: argparse.Namespace, demo: Any) -> Any:
    from verifier.judge import JudgeConfig, Sampling, make_judge

    from ._preflight import check_judge

    def judge_for(arm: Any) -> Any:
        overrides = dict(arm.judge)
        if demo is not None:
            overrides.update(base_urls=[demo.base_url], model=demo.model, api_key_env=demo.api_key_env,
                             sampling=Sampling(max_tokens=8192), image_max_side=224, preset="cpu-tiny")
        judge = make_judge(JudgeConfig.from_env(**overrides))
        check_judge(judge)
        return judge
    return judge_for


def _configured(arms: list) -> bool:
    from verifier.settings import env_settings

    return all(a.judge.get("base_urls") for a in arms) or bool(env_settings().judge_url)


def _needs_bench() -> int:
    """0, or 2 after one line naming the extra: the statistics need numpy (the bench extra), which a
    base install lacks; said before any work, not as a traceback half way."""
    from ._preflight import require

    try:
        require("experiment", "bench", "numpy")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def run(args: argparse.Namespace) -> int:
    if _needs_bench():
        return 2
    from verifier.experiment.runner import ExperimentMeta, prepare_folder

    from .score_cmd import none_if_degraded_of

    demo = None
    try:
        spec, arms, items = _prepare(args)
        out = Path(args.out)
        prepare_folder(out, ExperimentMeta(name=spec.name, repeats=spec.repeats, arms=arms), items)
        settings = {} if spec.none_if_degraded is None else {"none_if_degraded": spec.none_if_degraded}
        none_if_degraded = none_if_degraded_of(settings)
        if not _configured(arms) and not args.no_demo:
            from .score_cmd import start_demo

            demo = start_demo(argparse.Namespace(judge_url=None, model=None, settings={}))
        make = _judge_factory(args, demo)
        judges: dict[str, Any] = {}
        for arm in arms:  # built and probed now, outside the event loop: an unreachable judge is exit 2
            if arm.judge_key not in judges:
                judges[arm.judge_key] = make(arm)

        def judge_for(arm: Any) -> Any:
            return judges[arm.judge_key]
    except (ConfigError, JudgeUnavailableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        if demo is not None:
            demo.stop()
        return 2
    try:
        return _run(args, spec, arms, items, judge_for, none_if_degraded, out)
    finally:
        if demo is not None:
            from serving.demo import DEMO_WARNING

            demo.stop()
            print(DEMO_WARNING, file=sys.stderr)


def _run(args: argparse.Namespace, spec: Any, arms: list, items: list, judge_for: Any,
         none_if_degraded: frozenset[str], out: Path) -> int:
    from verifier.experiment import format_run, run_experiment

    from ._stopping import run_stoppable

    print(f"experiment {spec.name}: {len(arms)} arms x {spec.repeats} repeats x {len(items)} items -> {out}",
          file=sys.stderr)

    def on_repeat(r: int) -> None:
        print(f"repeat {r + 1}/{spec.repeats}...", file=sys.stderr)

    async def main(stop: asyncio.Event) -> Any:
        return await run_experiment(out, arms, items, spec.repeats, judge_for=judge_for,
                                    concurrency=spec.concurrency, none_if_degraded=none_if_degraded,
                                    stop=stop, on_repeat=on_repeat)

    try:
        line, stopped = run_stoppable(main)
    except (ConfigError, JudgeUnavailableError) as exc:  # e.g. DIR in use by another run
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if stopped.signals:
        print(stopped.describe(), file=sys.stderr)
    if line is not None:
        print(format_run(line))
    if stopped.exit_status is not None or line is None:
        return stopped.exit_status or 130
    if not args.no_report:
        report(argparse.Namespace(dir=str(out), json=None, html=None, n_boot=1000, seed=0, no_pages=False,
                                  ledger=None))
    complete = not any(a.unscored for a in line.arms.values())
    if complete:
        _to_ledger(out, Path(args.ledger) if args.ledger else out.resolve().parent / "ledger.jsonl")
    return 0 if complete else 3


def _to_ledger(out: Path, ledger: Path) -> None:
    """Every verification of DIR is scored: the experiment is complete, so it joins the ledger."""
    from verifier.experiment.ledger import append_line, line_of
    from verifier.experiment.report import build_report

    rep = build_report(out)
    if any(t.unscored for a in rep.arms for t in a.targets.values()):
        return  # an earlier run left some unscored: not complete yet
    if append_line(ledger, line_of(rep, out.resolve().name)):
        print(f"ledger: {rep.name} appended to {ledger}")


def report(args: argparse.Namespace) -> int:
    if _needs_bench():
        return 2
    from verifier.experiment.report import build_report, format_report
    from verifier.experiment.report_html import write_outputs

    if getattr(args, "ledger", None):
        return _ledger(Path(args.ledger))
    if not args.dir:
        print("error: experiment report needs DIR or --ledger FILE", file=sys.stderr)
        return 2
    out = Path(args.dir)
    try:
        rep = build_report(out, n_boot=args.n_boot, seed=args.seed)
    except (ConfigError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_report(rep))
    for kind, path in write_outputs(rep, out, json_path=args.json, html_path=args.html, pages=not args.no_pages):
        print(f"{kind} report written to {path}")
    return 0


def _ledger(path: Path) -> int:
    from verifier.experiment.ledger import format_ledger, read_ledger, write_ledger_html

    try:
        lines = read_ledger(path)
    except (OSError, ValueError) as exc:
        print(f"error: ledger {path}: {exc}", file=sys.stderr)
        return 2
    if not lines:
        print(f"error: ledger {path}: no completed experiment in it", file=sys.stderr)
        return 2
    print(format_ledger(lines))
    html = write_ledger_html(lines, path.with_suffix(".html"))
    print(f"HTML ledger written to {html}")
    return 0
