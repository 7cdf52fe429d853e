"""The suite's own speed habits that a test can hold.

The loopback HTTP servers the tests start and stop by the hundred (the echo judge and its
subclasses, the browser tier's task sites) must stop at once: `socketserver`'s default poll of
0.5 s made every `shutdown()` wait up to half a second, about 40 s of the fast tier's wall time.
"""
from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest

from browser_env.sites.server import SiteServer
from verifier.testing.echo_judge import EchoJudgeServer


@pytest.mark.parametrize("make", [EchoJudgeServer, SiteServer], ids=["echo-judge", "task-sites"])
def test_a_loopback_server_stops_without_waiting_out_a_poll(make):
    server = make().start()
    url = server.url if isinstance(server, EchoJudgeServer) else server.base_url
    try:
        urllib.request.urlopen(url, timeout=10).close()  # served: any answer, even a 404
    except urllib.error.HTTPError:
        pass
    t0 = time.monotonic()
    server.stop()
    assert time.monotonic() - t0 < 0.4  # was ~0.5 s: the poll restarts after each request
