"""Issue 38 §7: a short judge outage loses no rollout through `reward.remote`.

The judge (a real loopback stand-in) is stopped, so the service's judge client meets refused
connections, and restarted on the same port a few seconds later. Before the fix every request
paid the judge client's retry ladder and got 502 `JudgeUnavailableError`, which no client retries
(the issue: a 10 s outage scored 0 of 20). Now a connection-level judge failure is 503 with a
Retry-After, and the client retries it within its deadline, so every rollout is scored.
"""
from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytestmark = pytest.mark.slow  # a real service process and a judge outage of a few seconds

from service_helpers import LoopbackJudge, Service, trajectory, write_config

from reward import clear_sessions
from reward.remote import make_remote_rewards

OUTAGE_S = 4.0
ROLLOUTS = 20


class StoppableJudge(LoopbackJudge):
    """The loopback judge whose `stop` also drops its open (keep-alive) connections, as a judge
    process that dies does: the service's next request meets a reset or a refused port."""

    def start(self) -> StoppableJudge:
        self._conns: list[socket.socket] = []
        accept = self.httpd.get_request

        def get_request() -> tuple[socket.socket, object]:
            conn, addr = accept()
            self._conns.append(conn)
            return conn, addr

        self.httpd.get_request = get_request  # type: ignore[method-assign]
        self.httpd.handle_error = lambda *a: None  # type: ignore[method-assign]  # the dropped connections
        return super().start()

    def stop(self) -> None:
        super().stop()
        for conn in self._conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            except OSError:
                pass


def test_a_judge_outage_of_a_few_seconds_loses_no_rollout_through_reward_remote(tmp_path):
    # a short ladder (3 attempts, ~0.6 s) that the outage outlasts, as the 10 s outage
    # outlasted the default 8.4 s ladder; no breaker: its open circuit was already a 503, the outage
    # it has not opened on yet (fewer than breaker_failures requests seen) was the 502
    cfg = write_config(tmp_path / "cfg.json", transport_retries=2, backoff_initial_s=0.2, backoff_max_s=0.4,
                       breaker_failures=0, timeout_s=5)
    judge = StoppableJudge().start()
    port = judge.httpd.server_address[1]
    back: list[StoppableJudge] = []
    try:
        with Service(judge.url, "--config", str(cfg)) as svc:
            ok = httpx.post(f"{svc.url}/v1/verify", json={"trajectory": trajectory(999).model_dump(mode="json")},
                            timeout=60)
            assert ok.status_code == 200, ok.text  # the judge answers before the outage
            judge.stop()  # the outage: the port refuses connections

            # what a client sees during the outage: 503 with a Retry-After, not 502
            down = httpx.post(f"{svc.url}/v1/verify", json={"trajectory": trajectory(998).model_dump(mode="json")},
                              timeout=60)
            assert down.status_code == 503, down.text
            assert 1 <= int(down.headers["Retry-After"]) <= 5

            def restart() -> None:
                time.sleep(OUTAGE_S)
                back.append(StoppableJudge(port=port).start())  # the same port: the service's judge URL

            threading.Thread(target=restart, daemon=True).start()
            clear_sessions()
            r = make_remote_rewards(svc.url, batch_deadline_s=60.0, max_wait_s=60.0)
            extra: dict = {}
            start = time.monotonic()
            got = asyncio.run(r.outcome([["p"]] * ROLLOUTS, ["c"] * ROLLOUTS,
                                        trajectory=[trajectory(k) for k in range(ROLLOUTS)],
                                        log_extra=extra.__setitem__))
            took = time.monotonic() - start
            retries = dict(r.outcome.session.retries)
    finally:
        judge.stop() if not back else back[0].stop()
        clear_sessions()
    scored = sum(v is not None for v in got)
    assert scored == ROLLOUTS, (scored, extra.get("uv_outcome/unscored_reason"))
    assert retries["503"] >= 1, retries  # the service said "come back", and the client did
    assert OUTAGE_S - 0.5 <= took < 40.0, took  # scored once the judge was back, well inside the deadline
