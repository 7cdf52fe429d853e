"""The one Jinja environment of the site (autoescape on) and the page shell every page shares.

Why a Content-Security-Policy on a static page: everything a page shows from a trajectory or a
judge reply is escaped by Jinja, and the policy is the second wall. Only the page's own inline
script (allowed by its SHA-256) may run, images come from the site's own folder, nothing is fetched
from the network. A payload that slipped through escaping still could not execute.
"""

from __future__ import annotations

import base64
import hashlib
import math
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup


def fmt_num(x: Any, digits: int = 2) -> str:
    """Compact number: whole values without decimals (6, not 6.00), others rounded; '—' when missing."""
    if x is None or isinstance(x, bool) or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if isinstance(x, (int, float)):
        if float(x).is_integer() and abs(x) < 1e15:
            return f"{x:.0f}"
        out = f"{x:.{digits}f}".rstrip("0").rstrip(".")
        return out if out not in ("", "-0") else "0"
    return str(x)


def fmt_int(x: Any) -> str:
    return "—" if x is None else f"{int(x):,}"


def _asset(name: str) -> str:
    return resources.files("verifier.viewer").joinpath("templates", name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("verifier.viewer", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = fmt_num
    env.filters["int"] = fmt_int
    env.filters["pct"] = lambda x: "—" if x is None else f"{100 * x:.0f}%"
    css, js = _asset("style.css"), _asset("app.js")
    csp = (
        "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{base64.b64encode(hashlib.sha256(js.encode()).digest()).decode()}'; "
        "base-uri 'none'; form-action 'none'"
    )
    env.globals.update(css=Markup(css), js=Markup(js), csp=csp)
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def write_page(path: Path, template: str, **context: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(template, **context), encoding="utf-8")
    return path
