"""Readiness, apart from liveness: `/ready` says whether the service can score now (its judge answers).

Why: `/health` answered 200 "ok" with the judge dead (issue 38 §8), so an orchestrator or a load
balancer kept sending rollouts that could only come back unscored. `/health` stays the liveness
check (the process answers; restarting it would not bring a judge back); `/ready` is 503 while the
judge does not answer or the service drains. The judge is probed with one `GET <base_url>/models`
per endpoint, and the result is cached for `ttl_s`, so a probe every second from every load
balancer costs the judge one request per `ttl_s`, and concurrent readers share one probe.

A judge counts as answering when any of its endpoints replies with an HTTP status other than the
gateway errors (502, 503, 504): a server that lists no models (404) or does not serve GET (501, the
test judge) is up. A custom judge (`judge_factory`) has no URL to probe and is taken as ready.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

DOWN_STATUSES = (502, 503, 504)


class Readiness:
    def __init__(self, judge: dict[str, Any], *, ttl_s: float = 5.0, timeout_s: float = 2.0) -> None:
        self.urls = [str(u).rstrip("/") for u in judge.get("base_urls") or []]
        self.api_key = _api_key(judge)
        self.ttl_s, self.timeout_s = ttl_s, timeout_s
        self._checked: tuple[float, dict[str, Any]] | None = None
        self._lock: asyncio.Lock | None = None

    async def judge(self) -> dict[str, Any]:
        """{"answering": bool, "endpoints": {url: status or error}, "age_s": seconds since the probe}."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one probe at a time; the others read its result
            now = time.monotonic()
            if self._checked is None or now - self._checked[0] > self.ttl_s:
                self._checked = (now, await self._probe())
            at, result = self._checked
        return {**result, "age_s": round(time.monotonic() - at, 3)}

    async def _probe(self) -> dict[str, Any]:
        if not self.urls:
            return {"answering": True, "endpoints": {}}
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        async with httpx.AsyncClient(timeout=self.timeout_s, headers=headers) as client:
            seen = await asyncio.gather(*(_one(client, url) for url in self.urls))
        endpoints = dict(zip(self.urls, seen, strict=True))
        return {"answering": any(isinstance(s, int) and s not in DOWN_STATUSES for s in seen),
                "endpoints": endpoints}


async def _one(client: Any, url: str) -> int | str:
    """The HTTP status `url`/models answers, or the error's name."""
    try:
        async with client.stream("GET", url + "/models") as resp:
            return int(resp.status_code)  # the body is not read
    except Exception as exc:  # noqa: BLE001 - any failure to answer is the answer
        return type(exc).__name__


def _api_key(judge: dict[str, Any]) -> str | None:
    try:
        from verifier.judge.config import JudgeConfig

        return JudgeConfig(**judge).api_key() if judge.get("base_urls") and judge.get("model") else None
    except (ValueError, TypeError):
        return None


async def ready_answer(service: Any) -> tuple[int, dict[str, Any]]:
    """The status and body of `GET /ready` for `service` (a `core.RewardService`)."""
    judge = await service.readiness.judge()
    if service.draining:
        return 503, {"status": "draining", "judge": judge}
    if not judge["answering"]:
        return 503, {"status": "judge_unavailable", "judge": judge}
    return 200, {"status": "ready", "judge": judge}
