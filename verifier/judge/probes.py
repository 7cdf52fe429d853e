"""Small HTTP probes of a judge endpoint, for `check-judge` (`verifier.judgecheck`): one 1-token
chat call, a tiny image, the Prometheus counters vLLM publishes at ``/metrics``.

They bypass the judge client on purpose: a probe must see the server's own status and error text
(e.g. vLLM's 400 "At most N image(s) may be provided in one prompt"), not a retried, typed error.
"""
from __future__ import annotations

import base64
import io
import json
import re
import time
import urllib.error
import urllib.request
from typing import Any

from PIL import Image

from .config import JudgeConfig
from .served import server_root


def tiny_png(side: int = 56) -> str:
    buf = io.BytesIO()
    Image.new("RGB", (side, side), (200, 30, 30)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def raw_call(judge_cfg: JudgeConfig, content: list[dict[str, Any]]) -> tuple[int, str, float]:
    """One tiny chat call (1 reply token): (HTTP status, error text, seconds)."""
    body = {"model": judge_cfg.model, "max_tokens": 1, "temperature": 0,
            "messages": [{"role": "user", "content": content}]}
    req = urllib.request.Request(judge_cfg.base_urls[0] + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {judge_cfg.api_key()}"})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=judge_cfg.timeout_s) as resp:
            resp.read()
            return resp.status, "", time.perf_counter() - t0
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(4096).decode("utf-8", "replace"), time.perf_counter() - t0
    except (urllib.error.URLError, OSError) as exc:
        return 0, str(exc), time.perf_counter() - t0


def metric(text: str, name: str) -> float | None:
    found = [float(m.group(1)) for m in re.finditer(rf"^{re.escape(name)}(?:\{{[^}}]*\}})?\s+([0-9.eE+-]+)$",
                                                    text, re.MULTILINE)]
    return sum(found) if found else None


def read_metrics(judge_cfg: JudgeConfig) -> str | None:
    try:
        req = urllib.request.Request(server_root(judge_cfg.base_urls[0]) + "/metrics",
                                     headers={"Authorization": f"Bearer {judge_cfg.api_key()}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.read(1 << 22).decode("utf-8", "replace")
    except (urllib.error.URLError, OSError):
        return None


def cache_counters(text: str) -> tuple[float | None, float | None]:
    return metric(text, "vllm:prefix_cache_queries_total"), metric(text, "vllm:prefix_cache_hits_total")
