"""`cua-verifier bench`: measure verifiers against human labels on CUAVerifierBench.

Three modes:
- score:          ``bench --split S (--data-dir DIR | --hub) --judge-url URL --model M
                  --verifiers uv,webjudge,webvoyager --out DIR``: scores every trajectory with each
                  verifier (resumable, concurrent, progress bar), then writes the report into DIR;
- from results:   ``bench --from-results DIR``: recomputes the report from DIR, no judge calls;
- from labels:    ``bench --from-labels CSV [--out DIR]``: prints the agreement table of the verdicts
                  and labels stored in a one-row-per-task CSV (e.g. the published UV verdicts).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    from verifier.options import PROMPTS_HELP

    p = subparsers.add_parser("bench", help="agreement of verifiers with human labels (CUAVerifierBench)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--split", choices=["fara7b_om2w_browserbase", "internal"], help="score this split")
    mode.add_argument("--from-results", metavar="DIR", help="recompute the report from a previous --out DIR")
    mode.add_argument("--from-labels", metavar="CSV", help="agreement table of verdicts/labels stored in a CSV")
    mode.add_argument("--env-agreement", metavar="RESULTS",
                      help="agreement of the verifier with the environment's own scores (BrowserGym cum_reward, "
                           "OSWorld result.txt) in a results .jsonl written by score / score-dataset")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--data-dir", help="local folder with the dataset's parquet files")
    src.add_argument("--hub", action="store_true", help="download from the Hugging Face hub (default)")
    p.add_argument("--revision", default=None, help="dataset revision (default: the pinned one)")
    p.add_argument("--judge-url", help="OpenAI-compatible base URL(s), comma-separated (or CUA_JUDGE_URL)")
    p.add_argument("--model", help="judge model name (or CUA_JUDGE_MODEL)")
    p.add_argument("--verifiers", default="uv,webjudge,webvoyager", help="comma-separated: uv,webjudge,webvoyager")
    p.add_argument("--uv-config", default=None, metavar="JSON",
                   help='UV pipeline options as JSON, e.g. \'{"votes": 3, "top_k": 5}\' (see VerifierConfig)')
    p.add_argument("--prompts", metavar="DIR", help=PROMPTS_HELP)
    p.add_argument("--webvoyager-last-n", type=int, default=30, help="screenshots shown to WebVoyager (last N)")
    p.add_argument("--webjudge-threshold", type=int, default=3, help="WebJudge keeps screenshots scoring >= this")
    p.add_argument("--out", help="output folder (results, report); required with --split")
    p.add_argument("--limit", type=int, default=None, help="score only the first N tasks")
    p.add_argument("--concurrency", type=int, default=4, help="trajectories scored at once per verifier")
    p.add_argument("--threshold", type=float, default=0.8, help="process pass threshold (default 0.8)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples for CIs")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=handle)


def _stats(args: argparse.Namespace) -> dict:
    return {"threshold": args.threshold, "n_boot": args.n_boot, "seed": args.seed}


def handle(args: argparse.Namespace) -> int:
    from verifier.errors import ConfigError

    from ._preflight import require

    try:  # before any work: one line naming the extra, not a traceback half way
        require("bench", "bench", "numpy", "scipy", "sklearn", "matplotlib")
        if args.split:
            require("bench --data-dir" if args.data_dir else "bench from the hub", "bench",
                    "pyarrow" if args.data_dir else "datasets")
        if args.split:
            from verifier.options import apply_prompt_overlay

            apply_prompt_overlay(args)
        if args.split and args.data_dir and not any(Path(args.data_dir).rglob("*.parquet")):
            raise ConfigError(f"no parquet files under --data-dir {args.data_dir}: put the dataset's "
                              "parquet files there (trajectories/ and annotations/), or use --hub")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.env_agreement:
        return _env_agreement(args)
    from verifier.bench.labels import agreement_table, format_table, read_labels_csv
    from verifier.bench.report import ReportInputs, write_report
    from verifier.bench.runner import report_inputs

    if args.from_labels:
        labels, verdicts = read_labels_csv(args.from_labels)
        rows = agreement_table(verdicts, labels, **_stats(args))
        print(format_table(rows))
        if args.out:
            paths = write_report(ReportInputs(title=f"Agreement of stored verdicts ({Path(args.from_labels).name})",
                                              rows=rows, verdicts=verdicts, labels=labels, **_stats(args)),
                                 args.out)
            print(f"\nreport: {paths['md']} {paths['html']}")
        return 0
    if args.from_results:
        out = Path(args.from_results)
        try:
            inp = report_inputs(out, **_stats(args))
        except FileNotFoundError as exc:
            print(f"error: {exc}")
            return 2
        paths = write_report(inp, Path(args.out) if args.out else out)
        print(format_table(inp.rows))
        print(f"\nreport: {paths['md']} {paths['html']}")
        return 0
    if not args.out:
        print("error: --out DIR is required with --split")
        return 2
    return asyncio.run(_score(args))


def _env_agreement(args: argparse.Namespace) -> int:
    """`bench --env-agreement RESULTS`: kappa / FPR / FNR against the environment's scores, and the
    runs on which they disagree (`verifier.bench.env_agreement`); `--out DIR` also writes JSON."""
    import json

    from verifier.bench.env_agreement import as_json, env_agreement, format_env_agreement
    from verifier.records import ResultWriter

    path = Path(args.env_agreement)
    if not path.is_file():
        print(f"error: {path}: no such results file (score the runs first: cua-verifier score RUNS --out "
              f"{path.name})", file=sys.stderr)
        return 2
    report = env_agreement(ResultWriter(path).records(), n_boot=args.n_boot, seed=args.seed)
    print(format_env_agreement(report))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "env_agreement.json").write_text(json.dumps(as_json(report), indent=2) + "\n", encoding="utf-8")
        print(f"\nreport: {out / 'env_agreement.json'}")
    return 0


async def _score(args: argparse.Namespace) -> int:
    from verifier.bench.dataset import REVISION, load_split
    from verifier.bench.labels import format_table
    from verifier.bench.report import write_report
    from verifier.bench.runner import build_meta, report_inputs, score_all, verifier_fn
    from verifier.errors import ConfigError, JudgeUnavailableError
    from verifier.judge import make_judge
    from verifier.judge.config import JudgeConfig
    from verifier.settings import split_urls

    names = [n.strip() for n in args.verifiers.split(",") if n.strip()]
    uv_config = None
    if args.uv_config:
        from pydantic import ValidationError

        from verifier.config import VerifierConfig
        try:
            uv_config = VerifierConfig.model_validate_json(args.uv_config)
        except ValidationError as exc:
            print(f"error: invalid --uv-config: {exc}")
            return 2
    options = {"webvoyager": {"last_n": args.webvoyager_last_n}, "webjudge": {"threshold": args.webjudge_threshold}}
    fns = {n: verifier_fn(n, config=uv_config, options=options.get(n)) for n in names}  # fail before downloading
    overrides = {}
    if args.judge_url:
        overrides["base_urls"] = split_urls(args.judge_url)
    if args.model:
        overrides["model"] = args.model
    try:
        config = JudgeConfig.from_env(**overrides)
    except ConfigError as exc:
        print(f"error: {exc} (pass --judge-url and --model, or set CUA_JUDGE_URL / CUA_JUDGE_MODEL)")
        return 2
    revision = args.revision or REVISION
    judge = make_judge(config)
    try:
        from ._preflight import check_judge

        check_judge(judge)  # before downloading or reading the split
        tasks = load_split(args.split, data_dir=args.data_dir, revision=revision)
    except (ConfigError, JudgeUnavailableError, FileNotFoundError) as exc:
        await judge.aclose()
        hint = " (put the dataset's parquet files there, or use --hub)" if isinstance(exc, FileNotFoundError) else ""
        print(f"error: {exc}{hint}", file=sys.stderr)
        return 2
    if args.limit is not None:
        tasks = tasks[: args.limit]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    source = f"local parquet {args.data_dir}" if args.data_dir else "hub"
    meta = build_meta(tasks, split=args.split, source=source)
    meta.revision = revision
    (out / "bench_meta.json").write_text(meta.model_dump_json(indent=1), encoding="utf-8")
    try:
        for name, fn in fns.items():
            counts = await score_all(tasks, name, fn, judge, out, concurrency=args.concurrency,
                                     progress=not args.no_progress)
            log.info("bench %s: %s", name, dict(counts))
            print(f"{name}: scored {counts['scored']}, unscored {counts['unscored']}, "
                  f"already done {counts['skipped']}")
    finally:
        await judge.aclose()
    inp = report_inputs(out, **_stats(args))
    paths = write_report(inp, out)
    print(format_table(inp.rows))
    print(f"\nreport: {paths['md']} {paths['html']}")
    return 0
