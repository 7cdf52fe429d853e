"""Issue 38 §1, §2: what an unauthenticated client can make the service hold, through a real
`serve-reward` on 127.0.0.1: metric series (labelled by route, never by the raw path), and headers
(bounded in size and in the time to finish them)."""
from __future__ import annotations

import random
import socket
import string
import threading
import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
psutil = pytest.importorskip("psutil")
pytestmark = pytest.mark.slow  # real service processes

from service_helpers import LoopbackJudge, Service

KEY = {"Authorization": "Bearer s3cret"}


@pytest.fixture
def svc():
    with LoopbackJudge() as judge, Service(judge.url, "--api-key-env", "SX_TEST_KEY",
                                           extra_env={"SX_TEST_KEY": "s3cret"}) as s:
        yield s


def _series(text: str) -> int:
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def test_random_paths_add_no_metric_series(svc):
    """2,000 random paths, half of them without the key (401), half with it (404): no new series,
    and /metrics stays the same size. Before: 19 series per path (a counter and a histogram)."""
    rng = random.Random(38)

    def paths(n: int) -> list[str]:
        return ["/" + "".join(rng.choices(string.ascii_letters + "/", k=16)) for _ in range(n)]

    with httpx.Client(base_url=svc.url, timeout=30) as c:
        for k, p in enumerate(paths(10)):  # the `other` series exist from here on
            c.get(p, headers=KEY if k % 2 else {})
        c.get("/metrics", headers=KEY)  # and /metrics's own
        before = c.get("/metrics", headers=KEY).text
        codes = {c.get(p, headers=KEY if k % 2 else {}).status_code for k, p in enumerate(paths(2000))}
        after = c.get("/metrics", headers=KEY).text
    assert codes == {401, 404}
    assert _series(after) == _series(before), (_series(before), _series(after))
    assert len(after) < len(before) + 2000, (len(before), len(after))  # counts grow, labels do not
    assert 'endpoint="other",status="401"' in after and 'endpoint="other",status="404"' in after
    assert 'endpoint="/metrics"' in after  # real routes keep their own label
