"""`cua-verifier calibrate --judge-url URL --model NAME [--out report.json] [--suite DIR] [--only RULE...]`.

Runs the calibration suite (examples/calibration: small runs with the verdict a careful human
gives, one or more per judging rule) through the full verifier and prints, per rule, expected vs
got, then the outcome false-positive and false-negative rates on the suite. `--out` writes the
same report as JSON (`verifier.calibrate.CalibrationReport`).

Why a command of its own: changing a prompt or a judge model is only safe when its effect on each
rule is visible; the suite turns "the judge feels stricter" into counts. With no judge configured
it starts the CPU demo judge like `score` does, and says the verdicts are meaningless.
`--adversarial` runs the suite against the adversarial lenient judge instead (a loopback stand-in that
answers every schema as leniently as it allows: verifier.testing.lenient_judge) and reports how many
expected failures code still fails without the judge's help, and that no expected success is lost.

Exit status: 0 every case scored, 3 some case unscored or unavailable, 2 bad usage or configuration.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from verifier.errors import ConfigError, JudgeUnavailableError

from ._options import add_scoring_args, check_known_keys, concurrency_of, settings_overrides


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("calibrate", help="run the calibration suite: expected vs got per judging rule",
                              description=__doc__.split("\n")[0])
    p.add_argument("--suite", help="suite folder (default: examples/calibration of this checkout)")
    p.add_argument("--only", nargs="+", metavar="RULE", help="only cases testing these rule ids (e.g. O2 R1 X1)")
    p.add_argument("--out", help="also write the report as JSON here")
    p.add_argument("--html", metavar="PATH", help="also write the report as a self-contained HTML page (viewer style)")
    add_scoring_args(p, default_concurrency=4)
    p.add_argument("--adversarial", action="store_true",
                   help="judge with the adversarial lenient judge (says yes to everything, on loopback): "
                        "how many expected failures code still fails")
    p.add_argument("--no-demo", action="store_true",
                   help="fail instead of starting the CPU demo judge when no judge is configured")
    p.set_defaults(func=run)


def _judge(args: argparse.Namespace, demo: Any) -> Any:
    from verifier.judge import JudgeConfig, Sampling, make_judge

    overrides: dict[str, Any] = dict(args.settings.get("judge") or {})
    if demo is not None:  # the demo's own key; random weights fill every string: room for replies, small images
        overrides.update(base_urls=[demo.base_url], model=demo.model, api_key_env=demo.api_key_env,
                         sampling=Sampling(max_tokens=8192), image_max_side=224, preset="cpu-tiny")
    config = JudgeConfig.from_env(**overrides)
    args.judge_model = config.model
    return make_judge(config)


def _start_demo() -> Any:
    from serving.demo import DEMO_WARNING, start_demo_judge

    print(DEMO_WARNING, file=sys.stderr)
    print("starting the CPU demo judge (no --judge-url / CUA_JUDGE_URL given; --no-demo to refuse)...",
          file=sys.stderr)
    demo = start_demo_judge()
    print(f"demo judge ready at {demo.base_url} (log: {demo.log_path})", file=sys.stderr)
    return demo


def run(args: argparse.Namespace) -> int:
    from verifier.calibrate import SuiteError, load_suite
    from verifier.config import VerifierConfig

    demo = lenient = None
    try:
        args.settings = settings_overrides(args)
        check_known_keys(args.settings)
        concurrency = concurrency_of(args.settings, args)
        try:
            config = VerifierConfig(**args.settings.get("verifier", {}))
        except ValueError as exc:
            raise ConfigError(f"invalid verifier configuration: {exc}") from exc
        cases = load_suite(args.suite, only=args.only)
        from verifier.rubrics import RubricPlan

        args.rubric_plan = RubricPlan.of(args.settings.get("rubrics"), bool(args.settings.get("rubrics_only")))
        configured = (args.settings.get("judge") or {}).get("base_urls") or os.environ.get("CUA_JUDGE_URL")
        if args.adversarial:
            from verifier.testing.lenient_judge import LenientJudgeServer

            lenient = LenientJudgeServer().start()
            args.settings.setdefault("judge", {}).update(base_urls=[lenient.url], model="lenient-judge",
                                                         api_key_env="CUA_LENIENT_JUDGE_KEY")
        elif not configured and not args.no_demo:
            demo = _start_demo()
        judge = _judge(args, demo)
        from .score_cmd import build_rubric_judge

        args.rubric_judge = build_rubric_judge(args)
    except (ConfigError, SuiteError, JudgeUnavailableError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        if demo is not None:
            demo.stop()
        if lenient is not None:
            lenient.stop()
        return 2
    try:
        return _calibrate(args, cases, config, judge, concurrency, demo is not None)
    finally:
        if lenient is not None:
            lenient.stop()
        if demo is not None:
            from serving.demo import DEMO_WARNING

            demo.stop()
            print(DEMO_WARNING, file=sys.stderr)


def _calibrate(args: argparse.Namespace, cases: list, config: Any, judge: Any, concurrency: int,
               demo: bool) -> int:
    from tqdm.auto import tqdm

    from verifier.calibrate import build_report, format_report, run_suite

    from .score_cmd import none_if_degraded_of

    rubrics, rubric_judge = args.rubric_plan, getattr(args, "rubric_judge", None)

    done, unscored = [0], [0]
    per_case = bool(getattr(args, "verbose", 0)) and not args.no_progress  # -v: a line per case instead
    bar = tqdm(total=len(cases), desc="calibrate", unit="case", dynamic_ncols=True,
               disable=args.no_progress or per_case)

    def progress(run: Any) -> None:
        done[0] += 1
        unscored[0] += run.result is None
        bar.set_postfix(unscored=unscored[0], refresh=False)
        bar.update(1)
        if per_case:
            state = "scored" if run.result is not None else f"not scored ({(run.error or '')[:80]})"
            print(f"[{done[0]}/{len(cases)}] {run.case}: {state}", file=sys.stderr)

    async def main() -> list:
        try:
            return await run_suite(cases, judge=judge, config=config, concurrency=concurrency, on_done=progress,
                                   rubrics=rubrics, rubric_judge=rubric_judge)
        finally:
            bar.close()
            await judge.aclose()
            if rubric_judge is not None:
                await rubric_judge.aclose()

    t0 = time.perf_counter()
    runs = asyncio.run(main())
    suite = str(args.suite or Path("examples") / "calibration")
    report = build_report(cases, runs, suite=suite, judge_model=getattr(args, "judge_model", None), demo_judge=demo,
                          only=args.only, wall_s=time.perf_counter() - t0,
                          none_if_degraded=none_if_degraded_of(args.settings), adversarial=args.adversarial)
    print(format_report(report))
    if args.out:
        Path(args.out).write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        print(f"report written to {args.out}")
    if args.html:
        from verifier.viewer import model_sections, render_report

        render_report("Calibration report", model_sections(report, "Calibration"), args.html)
        print(f"HTML report written to {args.html}")
    return 3 if any(v.status != "scored" for v in report.cases) else 0
