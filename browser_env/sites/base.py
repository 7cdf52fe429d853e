"""What every task site shares: the page type, HTML escaping and a common page frame."""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

STYLE = """
body{font-family:sans-serif;margin:0;background:#fafafa;color:#222}
header{background:#234;color:#fff;padding:10px 18px;font-size:20px}
header a{color:#fff;margin-right:14px;text-decoration:none}
main{padding:14px 18px} .card{background:#fff;border:1px solid #ccc;border-radius:6px;padding:8px 12px;
margin:8px 0} .price{font-weight:bold;color:#063} .warn{color:#a00;font-weight:bold}
button,input,select{font-size:16px;margin:4px} table{border-collapse:collapse}
td,th{border:1px solid #bbb;padding:4px 10px}
"""


@dataclass
class Page:
    """One HTTP answer: status, HTML body, optional redirect target."""

    body: str = ""
    status: int = 200
    location: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def redirect(cls, to: str) -> Page:
        return cls(status=303, location=to)

    @classmethod
    def not_found(cls, what: str = "page") -> Page:
        return cls(body=frame("Not found", f"<p>No such {esc(what)}.</p>"), status=404)


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def frame(title: str, body: str, *, nav: str = "") -> str:
    """A whole HTML document with the shared style, a header bar and the page title."""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
            f"<style>{STYLE}</style></head><body><header>{nav}<b>{esc(title)}</b></header>"
            f"<main>{body}</main></body></html>")


class Site:
    """A task site: `name` is its URL prefix; `handle` answers one request from `state`."""

    name = "site"
    title = "Site"

    def initial_state(self) -> dict[str, Any]:
        return {}

    def handle(self, state: dict[str, Any], method: str, path: str, query: dict[str, str],
               form: dict[str, str]) -> Page:
        raise NotImplementedError

    def url(self, path: str = "") -> str:
        return f"/{self.name}/{path.lstrip('/')}"
