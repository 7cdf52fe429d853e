"""Defensive readers of JSON results: a missing, null or mistyped field gives a neutral value.

Results on disk may come from older or newer versions of the verifier; the viewer reads them with
these instead of validating them, so one odd field never costs a page.
"""

from __future__ import annotations

import json
import math
from typing import Any

BANDS = [(0.0, 0.2, "0-0.2"), (0.2, 0.5, "0.2-0.5"), (0.5, 0.8, "0.5-0.8"), (0.8, 1.01, "0.8-1")]


def d(x: Any) -> dict:
    return x if isinstance(x, dict) else {}


def lst(x: Any) -> list:
    return x if isinstance(x, list) else []


def num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or math.isnan(x):
        return None
    return float(x)


def text(x: Any) -> str:
    if x is None:
        return ""
    return x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)


def ints(x: Any) -> list[int]:
    return [v for v in lst(x) if isinstance(v, int) and not isinstance(v, bool)]


def band(score: float | None) -> str:
    if score is None:
        return "none"
    return next((name for lo, hi, name in BANDS if lo <= score < hi), "0.8-1")


def pretty(x: Any) -> str:
    return json.dumps(x, ensure_ascii=False, indent=1, sort_keys=True, default=str)
