"""What bounded a load: the waits each bound counts, the service's metrics, and the verdict rule."""
from __future__ import annotations

import asyncio
import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from service_helpers import LoopbackJudge, Service, trajectory, write_config

from serving.perf import bounds
from serving.reward_service.budget import ByteBudget
from verifier.waits import Waits, waited


async def test_waited_counts_only_acquires_that_blocked_and_for_how_long():
    sem, waits = asyncio.Semaphore(1), Waits()
    async with waited(sem, waits):
        pass
    assert (waits.count, waits.seconds) == (0, 0.0)  # free: nothing counted

    async def holder():
        async with waited(sem, waits):
            await asyncio.sleep(0.2)

    task = asyncio.create_task(holder())
    await asyncio.sleep(0)  # the holder takes the semaphore
    async with waited(sem, waits):
        assert task.done()
    assert waits.count == 1 and 0.15 <= waits.seconds < 1.0
    assert not sem.locked()  # released on exit
    assert Waits.total([waits, Waits(2, 1.0)]) == Waits(3, waits.seconds + 1.0)


async def test_a_wait_cut_short_by_cancellation_counts_too():
    """A rollout cancelled by its deadline while waiting for a slot waited all the same: under
    overload those are the waits that matter most."""
    sem, waits = asyncio.Semaphore(0), Waits()

    async def wait_forever():
        async with waited(sem, waits):
            pass

    task = asyncio.create_task(wait_forever())
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert waits.count == 1 and waits.seconds >= 0.09
    sem.release()
    assert not sem.locked()  # the cancelled waiter took nothing


def test_judge_waits_are_a_counter_across_event_loops():
    """The session's judge waits sum every loop's judge, closed loops included: a sum over live
    loops only would go back when one closes, which Prometheus reads as a reset."""
    from verifier.session import VerifierSession
    from verifier.settings import RewardSettings

    class PooledJudge:  # a judge with a connection pool's counter, as OpenAICompatJudge has
        def __init__(self):
            self.waits = Waits()

    session = VerifierSession(RewardSettings(judge_factory=PooledJudge))

    async def one_loop(seconds: float) -> None:
        session.judge_for_loop().waits.add(seconds)
        await session.aclose()  # the loop's state is dropped

    asyncio.run(one_loop(1.0))
    asyncio.run(one_loop(2.0))
    assert session.waits()["judge"] == Waits(2, 3.0)


async def test_byte_budget_counts_a_wait_that_got_its_bytes_and_one_that_timed_out():
    budget = ByteBudget(100, wait_s=0.1)
    assert await budget.acquire(80)
    assert budget.waits.count == 0
    assert not await budget.acquire(50)  # waited 0.1 s, then refused (the 429)
    assert budget.waits.count == 1 and budget.waits.seconds >= 0.09

    async def free_later():
        await asyncio.sleep(0.05)
        await budget.release(80)

    budget.wait_s = 5.0
    asyncio.get_running_loop().create_task(free_later())
    assert await budget.acquire(50)
    assert budget.waits.count == 2 and budget.waits.seconds < 1.0


def _reading(**values: float) -> dict[str, float]:
    base = {f"{k}:{b}": 0.0 for k in ("wait_s", "waits") for b in bounds.BOUNDS}
    return base | {"cpu_s": 0.0, "judge_s": 0.0, "request_s": 0.0} | values


@pytest.mark.parametrize(("after", "wall_s", "processes", "expected"), [
    # a process at 0.9 of a core is CPU-bound, whatever else waited
    ({"cpu_s": 9.0, "request_s": 100.0, "wait_s:bytes": 50.0}, 10.0, 1, ["cpu", "bytes"]),
    # the same CPU over two replicas is 0.45 each: not bound by a core
    ({"cpu_s": 9.0, "request_s": 100.0, "wait_s:bytes": 50.0}, 10.0, 2, ["bytes"]),
    # every bound over the 10% share, largest first; judge waits against time in judge calls
    ({"request_s": 100.0, "wait_s:bytes": 20.0, "wait_s:slots": 40.0, "judge_s": 10.0, "wait_s:judge": 3.0},
     10.0, 1, ["slots", "judge", "bytes"]),
    # a share just under the threshold is not a bound; nothing over it: the judge's latency
    ({"request_s": 100.0, "wait_s:bytes": 9.9, "judge_s": 50.0, "wait_s:judge": 4.9}, 10.0, 1, ["latency"]),
    # no requests timed at all (a scrape that missed them): no division by zero, no bound invented
    ({"wait_s:bytes": 5.0}, 10.0, 1, ["latency"]),
])
def test_verdict_names_the_bounds_that_set_the_pace(after, wall_s, processes, expected):
    v = bounds.verdict(_reading(), _reading(**after), scored=10, wall_s=wall_s, processes=processes)
    assert v["bounds"] == expected
    assert v["hints"] == [bounds.HINTS[b] for b in expected]


def test_verdict_is_a_difference_of_two_readings():
    before = _reading(**{"request_s": 100.0, "wait_s:bytes": 90.0, "waits:bytes": 9.0, "cpu_s": 50.0})
    after = _reading(**{"request_s": 200.0, "wait_s:bytes": 95.0, "waits:bytes": 10.0, "cpu_s": 52.0})
    v = bounds.verdict(before, after, scored=4, wall_s=10.0)
    assert v["waiting_share"]["bytes"] == 0.05  # 5 s of 100, not 95 of 200
    assert v["wait_s_per_verification"]["bytes"] == 1.25 and v["times_waited"]["bytes"] == 1
    assert v["cores_per_process"] == 0.2 and v["bounds"] == ["latency"]


@pytest.mark.slow  # a real service process
def test_a_real_service_counts_waits_at_each_bound_and_the_verdict_names_them(tmp_path):
    """Budget for 3 bodies, 2 slots, 1 judge connection, 4 rollouts at once: the 4th waits for
    bytes, the 3rd for a slot, and the 2 running verifications' calls for the connection."""
    bodies = [httpx.Request("POST", "http://x", json={"trajectory": trajectory(k, f"task-{k}").model_dump(
        mode="json")}).read() for k in range(4)]
    mb = 3.5 * max(map(len, bodies)) / 2**20
    config = write_config(tmp_path / "cfg.json", max_concurrency=1)
    with LoopbackJudge(latency_s=0.15) as judge, Service(judge.url, "--concurrency", "2", "--max-inflight-mb",
                                                         f"{mb:.6f}", "--config", str(config)) as svc:
        before = bounds.read(httpx.get(svc.url + "/metrics").text)

        async def post_all() -> list[int]:
            async with httpx.AsyncClient(timeout=120) as client:
                replies = await asyncio.gather(*(client.post(svc.url + "/v1/verify", content=b, headers={
                    "Content-Type": "application/json"}) for b in bodies))
            return [r.status_code for r in replies]

        start = time.monotonic()
        assert asyncio.run(post_all()) == [200] * 4
        wall = time.monotonic() - start
        text = httpx.get(svc.url + "/metrics").text
    after = bounds.read(text)
    waited_counts = {b: after[f"waits:{b}"] - before[f"waits:{b}"] for b in bounds.BOUNDS}
    assert waited_counts["bytes"] >= 1 and waited_counts["slots"] >= 1 and waited_counts["judge"] >= 1
    assert after["wait_s:slots"] > 0.3  # a whole verification of several 0.15 s calls
    assert after["judge_s"] > after["wait_s:judge"] > 0 and after["request_s"] > 0 and after["cpu_s"] > 0
    v = bounds.verdict(before, after, scored=4, wall_s=wall)
    # 2 verifications on 1 connection: calls wait about half their time; the slot share depends on
    # when the 4 requests arrive (the threshold itself is tested above)
    assert "judge" in v["bounds"] and "cpu" not in v["bounds"]
    assert v["waiting_share"]["slots"] > 0 and v["waiting_share"]["bytes"] > 0
    assert 'cua_reward_judge_seconds_total{stage=' in text
