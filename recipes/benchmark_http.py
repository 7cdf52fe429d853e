"""Benchmark over real HTTP with real screenshots: what a verification costs beyond the judge itself.

A loopback judge (own process) answers every request after a fixed latency L and logs when each
request arrived and what it said. For each M it verifies one trajectory of M real screenshots
(1440x900 captures from ../shared/data when present; every fourth a byte-identical repeat) with a
fresh client, and prints:

  calls, logical rounds (usage.rounds), the observed critical path (sequential waves read from the
  judge's request timestamps), wall time against the ideal (rounds x L), client overhead (wall time
  not covered by judge latency along the observed path, % of wall), payload sent, and the share of
  request text that repeats an earlier request's prefix (what a prefix cache could reuse).

With --engine it runs against a real vLLM server instead (the CPU demo judge, started here, or
--judge-url) and also prints vLLM's own prefix-cache hit rate from /metrics.

    python recipes/benchmark_http.py                         # M = 5, 20, 50, 100 at L = 0.5 s
    python recipes/benchmark_http.py --no-warmup             # the table includes the cold first run
    python recipes/benchmark_http.py -m 50 --image-format jpeg
    python recipes/benchmark_http.py --engine -m 5,20 --group 4
"""
from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from verifier.judge.config import JudgeConfig
from verifier.perf.figures import table
from verifier.perf.run import ClientLog, engine_hit_rate, measure, start_latency_judge
from verifier.perf.shots import describe, source_pngs, trajectory


def judge_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Only the client options given on the command line (the defaults are the library's)."""
    out: dict[str, Any] = {}
    for flag, key in (("concurrency", "max_concurrency"), ("image_format", "image_format"),
                      ("image_max_side", "image_max_side"), ("media_dir", "image_media_dir")):
        value = getattr(args, flag)
        if value is not None:
            out[key] = value
    return out


def latency_config(url: str, args: argparse.Namespace) -> JudgeConfig:
    return JudgeConfig(base_urls=[url], model="judge", timeout_s=600, **judge_overrides(args))


def group_of(m: int, sources: list[bytes], g: int, tag: str) -> list:
    return [trajectory(m, sources, run=f"{tag}-{k}") for k in range(g)]


async def fixed_latency(args: argparse.Namespace, sources: list[bytes]) -> None:
    judge = start_latency_judge(args.latency)
    try:
        rows = []
        if args.warmup:
            # A trainer verifies thousands of trajectories in one process: the first one pays once
            # for imports, template compilation, the TLS context and the per-call output classes
            # (kept per criterion ids and screenshot number, see `narrowing.FOR_CALL_CACHE`). That
            # row is printed on its own, with as many screenshots as the largest M; the table is
            # the steady state (each M still gets a fresh client: a fresh image cache, new
            # connections, new screenshots).
            judge.reset()
            cfg = latency_config(judge.url, args)
            first = await measure(group_of(max(args.m), sources, args.group, "warm-up"), cfg,
                                  latency_s=args.latency, requests=judge.requests)
            print("first verification of this process (cold, not in the table):")
            print(table([first]))
        for m in args.m:
            judge.reset()
            cfg = latency_config(judge.url, args)
            rows.append(await measure(group_of(m, sources, args.group, f"m{m}"), cfg, latency_s=args.latency,
                                      requests=judge.requests))
        print(table(rows))
    finally:
        judge.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_engine(media_dir: str | None):
    """The CPU demo judge (vLLM, tiny random-weight model), with --allowed-local-media-path when
    `media_dir` is given. Returns (base_url, model, key_env, stop)."""
    import secrets

    from serving.command import ServeConfig, build_command
    from serving.demo import DEMO_KEY_ENV, cache_dir, default_judge_venv, ensure_judge_env, ensure_tiny_model
    from serving.launcher import start_server, stop_server, wait_for_health
    from serving.presets import get_preset

    venv = ensure_judge_env(default_judge_venv(), quiet=True)
    model = ensure_tiny_model(venv, cache_dir() / "tiny-qwen2vl")
    cfg = ServeConfig(preset=get_preset("cpu-tiny"), model=str(model), venv=str(venv), port=free_port(),
                      api_key_env=DEMO_KEY_ENV, **({"media_dir": media_dir} if media_dir else {}))
    os.environ[DEMO_KEY_ENV] = secrets.token_urlsafe(16)
    log = cache_dir() / "benchmark-judge.log"
    proc = start_server(build_command(cfg), log=log)
    try:
        wait_for_health(cfg.health_url, timeout_s=900, proc=proc, log_path=log)
    except BaseException:
        stop_server(proc)
        raise
    return cfg.base_url, cfg.served_model_name, DEMO_KEY_ENV, lambda: stop_server(proc)


def engine(args: argparse.Namespace, sources: list[bytes]) -> None:
    stop = None
    if args.judge_url:
        url, model, key_env = args.judge_url, args.model, "CUA_JUDGE_API_KEY"
    else:
        print("starting the CPU demo judge (vLLM, tiny random-weight model)...", file=sys.stderr)
        url, model, key_env, stop = start_engine(args.media_dir)
    rows, rates, sent = [], [], []
    try:
        for m in args.m:
            log = ClientLog()
            sent.append(log)
            overrides = {"image_max_side": 224, **judge_overrides(args)}  # the tiny model sees 64 tokens
            cfg = JudgeConfig(base_urls=[url], model=model, api_key_env=key_env, timeout_s=600, **overrides)
            trajs = group_of(m, sources, args.group, f"engine-m{m}-{os.getpid()}")
            run = measure(trajs, cfg, latency_s=0.0, requests=lambda log=log: log.requests, client_log=log)
            fig, rate = engine_hit_rate(url, lambda run=run: asyncio.run(run))
            rows.append(fig)
            rates.append(rate)
    finally:
        if stop is not None:
            stop()
    print(table(rows))
    for fig, rate, log in zip(rows, rates, sent):  # a re-ask is a request beyond the calls
        print(f"M={fig.screenshots}: vLLM prefix-cache hit rate {'n/a' if rate is None else f'{rate:.0%}'} "
              f"(prefix-repeat share on the wire {fig.prefix_share:.0%}); {len(log.requests)} requests "
              f"for {fig.calls} calls of finished verifications")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-m", type=lambda s: [int(x) for x in s.split(",")], default=[5, 20, 50, 100],
                   help="screenshot counts, comma-separated (default 5,20,50,100)")
    p.add_argument("--latency", type=float, default=0.5, help="fixed judge latency in seconds")
    p.add_argument("--group", type=int, default=1, help="rollouts of one task verified together")
    p.add_argument("--shots", type=Path, default=None,
                   help="folder of real PNG screenshots (default: $CUA_SHARED_DATA or ../shared/data)")
    p.add_argument("--concurrency", type=int, default=None, help="JudgeConfig.max_concurrency")
    p.add_argument("--image-format", choices=["png", "jpeg"], default=None)
    p.add_argument("--image-max-side", type=int, default=None)
    p.add_argument("--media-dir", default=None,
                   help="send screenshots as file:// URLs from this directory (JudgeConfig.image_media_dir; "
                        "--engine starts vLLM with --allowed-local-media-path on it)")
    p.add_argument("--no-warmup", dest="warmup", action="store_false",
                   help="no cold first verification (by default one, with the largest M, is printed apart)")
    p.add_argument("--engine", action="store_true", help="a real vLLM judge (CPU demo judge unless --judge-url)")
    p.add_argument("--judge-url", default=None)
    p.add_argument("--model", default="judge")
    args = p.parse_args()
    sources = source_pngs(args.shots)
    print(f"{describe(sources)}; judge latency {args.latency:.2f} s; group {args.group}"
          + (" (engine)" if args.engine or args.judge_url else ""), flush=True)
    if args.engine or args.judge_url:
        engine(args, sources)
    else:
        asyncio.run(fixed_latency(args, sources))


if __name__ == "__main__":
    main()
