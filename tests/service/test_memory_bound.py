"""Memory bounded by bytes: admission by bytes in flight, bodies parsed once, images held once."""
from __future__ import annotations

import asyncio
import base64
import contextlib
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from service_helpers import LoopbackJudge, png, trajectory

from serving.reward_service.budget import ByteBudget
from serving.reward_service.config import ServiceConfig
from verifier.judge.images import ImageEncoder
from verifier.settings import RewardSettings
from verifier.trajectory import Screenshot


async def test_budget_waits_then_refuses_and_admits_an_oversize_request_alone():
    b = ByteBudget(100, wait_s=0.2)
    assert await b.acquire(60)
    assert not await b.acquire(60)  # 120 > 100: waited 0.2 s, nothing freed
    assert b.rejected == 1 and b.in_flight == 60
    waiter = asyncio.ensure_future(b.acquire(60))
    await asyncio.sleep(0.05)
    assert not waiter.done() and b.waiting == 1
    await b.release(60)
    assert await waiter and b.in_flight == 60  # admitted as soon as the bytes freed
    await b.release(60)
    assert await b.acquire(500) and b.in_flight == 500  # bigger than the budget: alone, not starved
    assert b.retry_after(10) >= 1


def _body(traj) -> bytes:
    import json

    return json.dumps({"trajectory": traj.model_dump(mode="json")}).encode()


async def test_service_answers_429_with_retry_after_when_bytes_in_flight_are_over_budget():
    from serving.reward_service.app import create_app
    from serving.reward_service.core import RewardService

    with LoopbackJudge(latency_s=0.4) as judge:
        settings = RewardSettings(judge={"base_urls": [judge.url], "model": "echo"})
        body = _body(trajectory(1, shot=png((1, 2, 3), (300, 200))))
        config = ServiceConfig(max_inflight_bytes=int(len(body) * 1.5), admission_wait_s=0.3)
        service = RewardService(settings, config)
        app = create_app(settings, config, service)
        async with contextlib.aclosing(service.session), httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t",
                                     timeout=60) as client:
            first, second = await asyncio.gather(
                client.post("/v1/verify", content=body),
                client.post("/v1/verify", content=_body(trajectory(2, shot=png((1, 2, 3), (300, 200))))))
            codes = sorted([first.status_code, second.status_code])
            assert codes == [200, 429], (first.text, second.text)
            refused = first if first.status_code == 429 else second
            assert int(refused.headers["retry-after"]) >= 1 and "max-inflight-mb" in refused.text
            health = (await client.get("/health")).json()
            assert health["bytes_in_flight"] == 0 and health["bytes_high_water"] == len(body)
            again = await client.post("/v1/verify", content=body)  # bytes freed: admitted again
            assert again.status_code == 200
            bad = await client.post("/v1/verify", content=b"{not json")
            assert bad.status_code == 422 and bad.json()["error"]["type"] == "invalid_request"
            extra = await client.post("/v1/verify", content=b'{"trajectory": {}, "nope": 1}')
            assert extra.status_code == 422 and "nope" in extra.text


def test_a_data_url_goes_to_the_judge_as_its_own_text_and_its_decoded_copy_is_dropped(monkeypatch):
    from serving.reward_service.core import parse_trajectory

    data = png((9, 80, 200), (320, 200))
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    record = trajectory(1).model_dump(mode="json")
    record["screenshots"] = [{"step": 1, "timing": "after", "data_url": url}]
    traj = parse_trajectory(record, None, where="t")
    shot = traj.screenshots[0]
    assert shot._raw is None and shot.known_sha256 and shot.size() == (320, 200)
    encodes: list[bytes] = []
    monkeypatch.setattr(base64, "b64encode", lambda b: encodes.append(b) or b"")
    decodes: list[str] = []
    real_decode = base64.b64decode
    monkeypatch.setattr(base64, "b64decode", lambda s, **kw: decodes.append(s) or real_decode(s, **kw))
    enc = ImageEncoder(max_side=1280).encode(shot)
    assert enc.url == url and enc.passed_through and enc.nbytes == len(data)  # byte for byte
    assert not encodes and not decodes and enc.sha256 == shot.sha256  # no decode, no re-encode
    assert shot.data_url is enc.url  # the text is held once (the marked copy replaced the original)
    monkeypatch.undo()
    wrong = Screenshot.from_data_url("data:image/jpeg;base64," + base64.b64encode(data).decode(), step=1)
    assert ImageEncoder().encode(wrong).url.startswith("data:image/png;base64,")  # label fixed, re-encoded


def test_image_cache_is_bounded_in_bytes():
    shots = [Screenshot.from_bytes(png((k, 0, 0), (200, 100)), step=k) for k in range(6)]
    one = max(len(ImageEncoder().encode(s).url) for s in shots)
    enc = ImageEncoder(cache_size=100, cache_bytes=int(one * 3.5))
    for s in shots:
        enc.encode(s)
    assert len(enc._cache) == 3 and enc.cached_bytes <= enc.cache_bytes
    assert enc.cached(shots[0].sha256) is None and enc.cached(shots[-1].sha256) is not None


def test_allocator_settings_take_effect_on_glibc():
    import platform

    from serving.reward_service.memory import trim, tune_allocator

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    assert tune_allocator()
    blocks = [bytearray(512 * 1024) for _ in range(64)]
    del blocks
    trim()  # returns whether something was released; it must not fail either way


def test_the_services_heap_reuses_large_blocks_and_gives_them_back_when_trimmed():
    """In a fresh process with the service's settings: a 40 MB body-sized block and 1.5 MB
    screenshot-sized blocks freed and allocated again cost no new page faults (they come back from
    the arena, not from fresh mappings), and `trim` returns the freed pages (RSS drops)."""
    import platform
    import subprocess
    import sys

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    script = """
import resource, sys
from serving.reward_service.memory import trim, tune_allocator
assert tune_allocator()
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
def load():
    body = bytearray(40 * 2**20)
    shots = [bytearray(1536 * 1024) for _ in range(40)]
    for b in [body, *shots]:
        b[::4096] = b"x" * len(b[::4096])
    return body, shots
held = load(); del held
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
held = load(); del held
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
high = rss(); trim(); low = rss()
print(faults, high, low)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False,
                         cwd=str(Path(__file__).resolve().parents[2]))
    assert out.returncode == 0, out.stderr
    faults, high, low = map(int, out.stdout.split())
    assert faults < 2000  # ~25,000 (100 MB of fresh pages) if the blocks were mapped anew
    assert high - low > 60 * 2**20  # the freed 100 MB went back to the system


def test_settle_gc_freezes_the_built_service_and_release_collects_the_cycles_a_load_left():
    """In a fresh process: `settle_gc` takes what exists at startup out of the collector's walks
    and sets the service's thresholds; a garbage cycle holding 64 MB, which the raised young
    threshold lets live, is gone (and its pages returned) after `release`."""
    import platform
    import subprocess
    import sys

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    script = """
import gc, weakref
from serving.reward_service.memory import GC_THRESHOLDS, release, settle_gc, tune_allocator
tune_allocator()
import serving.reward_service.app  # what a service imports at startup
settle_gc()
assert gc.get_freeze_count() > 10000, gc.get_freeze_count()
assert gc.get_threshold() == GC_THRESHOLDS
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
class Node:
    pass
a, b = Node(), Node()
a.peer, b.peer, a.blob = b, a, bytearray(64 * 2**20)
a.blob[::4096] = b"x" * len(a.blob[::4096])
alive = weakref.ref(a)
del a, b
high = rss()
assert alive() is not None  # a cycle: only the collector frees it
release()
print(alive() is None, high - rss())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False,
                         cwd=str(Path(__file__).resolve().parents[2]))
    assert out.returncode == 0, out.stderr
    freed, returned = out.stdout.split()
    assert freed == "True"
    assert int(returned) > 48 * 2**20


async def test_the_idle_release_waits_for_the_service_to_stay_idle():
    """A client that sends one rollout at a time empties the queue after each: the release (a
    collection, a trim, then page faults to touch that memory again) runs once the service has
    been idle for `delay_s`, not after every verification; and not while work is running."""
    from serving.reward_service.core import RewardService

    calls: list[int] = []
    service = RewardService(RewardSettings(judge={"base_urls": ["http://127.0.0.1:9"], "model": "m"}),
                            ServiceConfig())
    idle = service.idle  # wired to the admission queue's depth
    idle.delay_s, idle.action = 0.2, lambda: calls.append(service.queue.depth)

    def one_rollout_ends() -> None:
        service.queue.release(1)
        idle.ended()

    async with contextlib.aclosing(service.session):
        for _ in range(6):  # sequential rollouts, 0.05 s apart: never idle for 0.2 s
            assert service.queue.try_admit(1)
            await asyncio.sleep(0.05)
            one_rollout_ends()
        assert calls == []
        await asyncio.sleep(0.35)
        assert calls == [0]  # once, after the last one, with nothing in the queue

        assert service.queue.try_admit(2)
        one_rollout_ends()  # one of two ends: not idle
        await asyncio.sleep(0.35)
        assert calls == [0]
        assert service.queue.try_admit(1)
        one_rollout_ends()
        one_rollout_ends()
        assert service.queue.try_admit(1)  # busy again before the clock runs out
        await asyncio.sleep(0.35)
        assert calls == [0]
        one_rollout_ends()
        await asyncio.sleep(0.35)
        assert calls == [0, 0]


async def test_an_idle_release_due_while_the_loop_closes_is_skipped_quietly():
    """The idle clock may run out while `asyncio.run` shuts its executor down: no release, no error."""
    from serving.reward_service.memory import IdleRelease

    calls: list[int] = []
    idle = IdleRelease(lambda: 0, delay_s=0.01, action=lambda: calls.append(1))
    await asyncio.get_running_loop().shutdown_default_executor()
    idle.ended()
    await asyncio.sleep(0.05)
    assert calls == [] and idle._timer is None and not idle._running


async def test_bodies_half_read_do_not_wait_on_each_other():
    """Issue 38 §8: bytes are reserved as a body arrives, so two bodies half read can fill the budget;
    the reader that waited first may go past it, one request at a time (the bound is the budget plus
    one body), and the other waits for its bytes instead of both waiting until their 429."""
    b = ByteBudget(100, wait_s=5)
    first, second = object(), object()
    b.start_reading(first)
    b.start_reading(second)
    assert await b.acquire(60, reader=first) and await b.acquire(40, reader=second)  # full, both half read
    assert await asyncio.wait_for(b.acquire(50, held=60, reader=first), 1)  # goes past: 150
    waiter = asyncio.ensure_future(b.acquire(30, held=40, reader=second))
    await asyncio.sleep(0.05)
    assert not waiter.done() and b.in_flight == 150  # one request over the budget at a time
    await b.release(110, owner=first)  # it answered
    assert await asyncio.wait_for(waiter, 1) and b.in_flight == 70
    full = ByteBudget(100, wait_s=0.1)  # a first grant (no reader yet) never goes past a full budget
    assert await full.acquire(100) and not await full.acquire(10)


async def test_the_request_past_the_budget_reads_on_while_others_wait():
    """The request let past the budget needs several grants; a request that queued meanwhile must not
    make it wait behind it (each would wait for the other until their 429: the benchmark fell from
    ~400 to ~40 verifications/min with 50-120 429s per run)."""
    b = ByteBudget(100, wait_s=5)
    first, second = object(), object()
    b.start_reading(first)
    b.start_reading(second)
    assert await b.acquire(50, reader=first) and await b.acquire(50, reader=second)  # full, both half read
    assert await asyncio.wait_for(b.acquire(10, held=50, reader=second), 1)  # past the budget: 110
    waiter = asyncio.ensure_future(b.acquire(20, held=50, reader=first))  # queued: one over at a time
    await asyncio.sleep(0.05)
    assert not waiter.done()
    assert await asyncio.wait_for(b.acquire(30, held=60, reader=second), 1)  # reads on, not behind `first`
    await b.release(90, owner=second)
    assert await asyncio.wait_for(waiter, 1) and b.in_flight == 70
