"""Load: 200+ rollouts at once against a service with a small queue and a slow, faulty loopback judge."""
from __future__ import annotations

import asyncio

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

from service_helpers import LoopbackJudge, Service, write_config

from serving.perf.loadtest import run_load

N, TASKS, QUEUE = 200, 10, 24


@pytest.mark.slow
def test_200_concurrent_rollouts_nothing_lost_queue_bounded_one_rubric_per_task(tmp_path):
    config = write_config(tmp_path / "cfg.json", max_concurrency=32)
    with LoopbackJudge(latency_s=0.02, fault_rate=0.05, seed=1) as judge, \
            Service(judge.url, "--queue-size", str(QUEUE), "--concurrency", "16", "--config", str(config)) as svc:
        figures = asyncio.run(run_load(svc.url, n=N, tasks=TASKS))
        health = httpx.get(f"{svc.url}/health").json()
        metrics = httpx.get(f"{svc.url}/metrics").text
    print(f"\nload: {figures} judge faults injected: {judge.faults}")
    assert figures["scored"] == N and figures["unscored"] == 0, figures["errors"]  # nothing lost
    assert figures["retried_429"] > 0  # the queue pushed back ...
    assert health["queue_high_water"] <= QUEUE  # ... and stayed bounded
    assert judge.faults > 0  # faults were injected and absorbed by the judge client's retries
    assert judge.rubric_calls == TASKS  # one rubric per task, for 20 rollouts each
    assert judge.by_schema["Outcome"] == N  # every rollout verified exactly once
    assert f'cua_reward_verifications_total{{status="scored"}} {float(N)}' in metrics
