"""`cua-verifier serve-reward`: the verifier as an HTTP reward service (see serving/reward_service)."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from verifier.errors import ConfigError

from .config import DEFAULT_KEY_ENV


def register(subparsers: Any) -> None:
    from verifier.options import add_scoring_args

    p = subparsers.add_parser("serve-reward", help="serve the verifier over HTTP for all training ranks",
                              description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1", help="bind address (default loopback; any other "
                   "address requires an API key)")
    p.add_argument("--port", type=int, default=8012, help="port (0: a free one, printed at start)")
    p.add_argument("--api-key-env", default=DEFAULT_KEY_ENV, help="variable holding the API key "
                   f"(default {DEFAULT_KEY_ENV}); when set, every request but /health needs it")
    p.add_argument("--media-root", help="folder that screenshot paths must resolve under "
                   "(default: paths refused, data URLs only)")
    p.add_argument("--max-body-mb", type=float, default=64.0, help="largest request body (413 above)")
    p.add_argument("--max-batch", type=int, default=64, help="most trajectories in one batch request")
    p.add_argument("--queue-size", type=int, default=256,
                   help="trajectories admitted at once (running + waiting); more get 429 + Retry-After")
    p.add_argument("--max-inflight-mb", type=float, default=384.0,
                   help="request bytes held at once (bodies of admitted requests, until answered); a "
                   "request that does not fit waits --admission-wait-s, then gets 429 + Retry-After")
    p.add_argument("--admission-wait-s", type=float, default=30.0, help="see --max-inflight-mb")
    p.add_argument("--deadline-s", type=float, default=600.0, help="default per-request deadline (504)")
    p.add_argument("--grace-s", type=float, default=30.0, help="shutdown: seconds to finish in-flight work")
    p.add_argument("--body-timeout-s", type=float, default=60.0,
                   help="seconds a client may take to send its request body (408 after)")
    p.add_argument("--header-timeout-s", type=float, default=10.0,
                   help="seconds a client may take to send its request line and headers (408 after)")
    p.add_argument("--max-header-kb", type=float, default=64.0,
                   help="largest request line and headers (431 above), checked before the API key")
    p.add_argument("--replicas", type=int, default=1, help="replicas on Ray Serve, with task affinity (every "
                   "rollout of a task on one replica); 1 without --ray: one process, no Ray (default)")
    p.add_argument("--ray", metavar="ADDRESS", help="run on Ray Serve in this cluster (host:port, auto); "
                   "'local': a private local instance (what --replicas N > 1 starts by default)")
    add_scoring_args(p, default_concurrency=32, files=False)  # paths: --media-root
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from verifier.options import settings_overrides
    from verifier.settings import RewardSettings

    from .config import ServiceConfig

    try:
        from .server import serve
    except ImportError as exc:
        print(f"error: serve-reward needs the service extra (pip install 'cua-verifier[service]'): {exc}",
              file=sys.stderr)
        return 2

    try:
        settings = RewardSettings.from_env(**settings_overrides(args))
        from verifier.rubrics import load_book

        if settings.rubrics:  # checked now: a bad rubric file stops the server before it listens
            load_book(settings.rubrics)
        if "max_concurrency" not in settings.model_fields_set:
            settings = settings.model_copy(update={"max_concurrency": args.default_concurrency})
        config = ServiceConfig(host=args.host, port=args.port, api_key_env=args.api_key_env,
                               media_root=args.media_root, max_body_bytes=int(args.max_body_mb * 2**20),
                               max_batch=args.max_batch, queue_size=args.queue_size,
                               max_inflight_bytes=int(args.max_inflight_mb * 2**20),
                               admission_wait_s=args.admission_wait_s,
                               deadline_s=args.deadline_s, grace_s=args.grace_s,
                               body_timeout_s=args.body_timeout_s, header_timeout_s=args.header_timeout_s,
                               max_header_bytes=int(args.max_header_kb * 1024))
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.replicas < 1:
        print("error: --replicas must be at least 1", file=sys.stderr)
        return 2
    if args.replicas > 1 or args.ray:
        try:
            from .serve_run import serve_replicas
        except ImportError as exc:
            print(f"error: --replicas/--ray need Ray Serve (pip install 'cua-verifier[ray]'): {exc}",
                  file=sys.stderr)
            return 2
        return serve_replicas(settings, config, replicas=args.replicas, ray_address=args.ray)
    return serve(settings, config, log_level="info" if args.verbose else "warning")
