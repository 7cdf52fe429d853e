"""The training browser opens only the task sites (issue 20 B1): the allow-list is the site server's
base URL *with* its trailing slash, so a URL that merely starts with the same characters - a
userinfo trick, a longer host name, another port - is refused. Checked on `BrowserEnv`'s own
resolver against the real site server (no Chromium needed)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from browser_env.env import BrowserEnv
from browser_env.sites.server import SiteServer


@pytest.fixture(scope="module")
def base():
    server = SiteServer().start()
    try:
        yield server.base_url
    finally:
        server.stop()


def resolve(base_url: str, url: str) -> str:
    env = SimpleNamespace(_server=SimpleNamespace(base_url=base_url))
    return BrowserEnv._resolve(env, url)  # type: ignore[arg-type]


def test_task_site_urls_resolve(base):
    assert resolve(base, "/shop/") == base + "/shop/"
    assert resolve(base, base + "/library/?q=x") == base + "/library/?q=x"
    assert resolve(base, base) == base


@pytest.mark.parametrize("make", [
    lambda b: b + "@evil.example/",  # userinfo: the host is evil.example
    lambda b: b + ".evil.example/x",  # a longer host name
    lambda b: b + "0/",  # another port (PORT0)
    lambda b: b.rsplit(":", 1)[0] + ":1/",  # another port on the same host
    lambda b: "https://example.com/",
    lambda b: b + "\\@evil.example/",
])
def test_look_alike_urls_are_refused(base, make):
    with pytest.raises(ValueError, match="only the task sites"):
        resolve(base, make(base))
