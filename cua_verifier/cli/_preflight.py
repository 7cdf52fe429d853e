"""Checks a command runs before any work: optional dependencies present, judge reachable.

Why: a missing optional package used to surface as a `ModuleNotFoundError` traceback after the
scoring was done (`score-dataset --out x.parquet` without pyarrow), and a judge that is not there
(a stale env file from a restarted demo judge) cost minutes of retries and a log of unscored
records. Both are now one line, naming the fix, before the first trajectory is read.
"""
from __future__ import annotations

import importlib.util
import json
import sys
import urllib.error
import urllib.request
from typing import Any

from verifier.errors import ConfigError, JudgeUnavailableError

HEALTH_TIMEOUT_S = 5.0


def require(what: str, extra: str, *modules: str) -> None:
    """ConfigError naming the extra to install when any of `modules` cannot be imported."""
    missing = [m for m in modules if _missing(m)]
    if missing:
        raise ConfigError(f"{what} needs {', '.join(missing)}: pip install 'cua-verifier[{extra}]'")


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a parent package missing, or a module set to None
        return True


def check_judge(judge: Any, *, timeout_s: float = HEALTH_TIMEOUT_S) -> None:
    """GET <base_url>/models on each endpoint of an HTTP judge (others are skipped).

    Raises JudgeUnavailableError when no endpoint answers (refused, timed out, unresolvable), or
    every one rejects the API key; an endpoint that is down while another answers is reported on
    stderr and left to the client's failover. Any other HTTP answer counts as reachable."""
    from verifier.judge.config import JudgeConfig

    config = getattr(judge, "config", None)
    if not isinstance(config, JudgeConfig):
        return  # a scripted or custom judge: nothing to probe
    problems = {url: _probe(url, config.api_key(), timeout_s) for url in config.base_urls}
    bad = {url: why for url, why in problems.items() if why}
    if len(bad) == len(problems):
        detail = "; ".join(f"{url}: {why}" for url, why in bad.items())
        raise JudgeUnavailableError(
            f"judge unreachable before scoring ({detail}). Is the server running? If you sourced an env "
            "file from `serve-judge --demo`, that judge may have restarted on another port: source the "
            "new file (or set CUA_JUDGE_URL / --judge-url)")
    for url, why in bad.items():
        print(f"warning: judge endpoint {url} is not answering ({why}); using the others", file=sys.stderr)
    from verifier.judgecheck import refuse_doomed_run

    refuse_doomed_run(judge)  # a model the server does not serve: ConfigError now, not N unscored records


def _probe(base_url: str, api_key: str, timeout_s: float) -> str | None:
    """None when the endpoint answers as an OpenAI-compatible server, else why not."""
    req = urllib.request.Request(base_url.rstrip("/") + "/models", headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            json.loads(resp.read(1 << 20) or b"{}")
            return None
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return f"HTTP {exc.code}: the API key was rejected (check the variable named by api_key_env)"
        if exc.code >= 500 and exc.code != 501:
            print(f"warning: judge {base_url} answered HTTP {exc.code} to GET /models; scoring anyway "
                  "(the client retries server errors)", file=sys.stderr)
        return None  # something answers there (some servers do not list models, or not over GET)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"{type(reason).__name__}: {reason}" if not isinstance(reason, str) else reason
    except ValueError:  # e.g. an HTML page from a proxy: reachable, but say so
        print(f"warning: judge {base_url} answered GET /models with something that is not JSON "
              "(is this an OpenAI-compatible /v1 URL?)", file=sys.stderr)
        return None
