"""The Ray Serve pieces without a cluster: the task-affinity router's choice and the proxy gate."""
from __future__ import annotations

import asyncio
import json
from collections import Counter
from types import SimpleNamespace

import pytest

pytest.importorskip("ray.serve")
pytest.importorskip("fastapi")

from serving.reward_service.affinity import Placement, TaskAffinityRouter, owner_index
from serving.reward_service.serve_gate import MARKER, ProxyGate, session_header, task_of_body

KEY_ENV = "CUA_TEST_GATE_KEY"


def _replicas(*ids: str) -> list:
    return [SimpleNamespace(replica_id=SimpleNamespace(unique_id=i)) for i in ids]


def _pending(session_id: str, request_id: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(metadata=SimpleNamespace(session_id=session_id, internal_request_id=request_id),
                           routing_context=SimpleNamespace(should_backoff=False))


ROUTER = SimpleNamespace(placement=Placement())


def _choose(replicas: list, pending: SimpleNamespace | None, router: SimpleNamespace = ROUTER) -> list:
    # choose_replicas reads only the router's placements: called unbound, no cluster needed
    return asyncio.run(TaskAffinityRouter.choose_replicas(router, replicas, pending))  # type: ignore[arg-type]


def test_router_sends_a_task_to_one_replica_and_waits_for_it():
    reps = _replicas("r-a", "r-b")
    owners = set()
    for task in (f"task-{k}" for k in range(16)):
        pending = _pending(task)
        ranks = [_choose(reps, pending) for _ in range(3)]
        assert all(r == ranks[0] for r in ranks) and len(ranks[0]) == 1 and len(ranks[0][0]) == 1
        assert pending.routing_context.should_backoff  # a full owner is waited for, never bypassed
        owners.add(ranks[0][0][0].replica_id.unique_id)
    assert owners == {"r-a", "r-b"}  # 16 tasks use both replicas


def test_router_without_a_key_or_with_one_replica_offers_every_candidate():
    reps = _replicas("r-a", "r-b")
    assert _choose(reps, _pending("")) == [reps]  # /health, /metrics: the least loaded
    assert _choose(reps, None) == [reps]
    one = _replicas("only")
    assert _choose(one, _pending("task-1")) == [one]


def test_new_tasks_are_placed_evenly_and_each_stays_where_it_was_placed():
    """8 tasks on 2 replicas split 4/4 (hashing alone gave 2/6 in the benchmark), 16 on 3 at most one
    apart; every later rollout of a task goes where its first went, as long as it is in use."""
    clock = SimpleNamespace(now=0.0)
    place = Placement(ttl_s=60, clock=lambda: clock.now)
    place.place("warm-up", ["r-a", "r-b"], request_id="w")
    place.finished("w")  # done before the load: no longer counts as load
    tasks = [f"bench-task-{k}" for k in range(8)]
    first = {t: place.place(t, ["r-a", "r-b"], request_id=f"{t}/0") for t in tasks}
    assert sorted(Counter(first.values()).values()) == [4, 4]
    for step in range(5):  # rollouts keep coming, interleaved
        clock.now += 10
        assert all(place.place(t, ["r-a", "r-b"]) == first[t] for t in reversed(tasks))
    three = Placement()
    counts = Counter(three.place(f"t{k}", ["x", "y", "z"], request_id=f"q{k}") for k in range(16))
    assert max(counts.values()) - min(counts.values()) <= 1
    router = SimpleNamespace(placement=Placement())
    reps = _replicas("r-a", "r-b")
    chosen = Counter(_choose(reps, _pending(t, f"{t}/0"), router)[0][0].replica_id.unique_id for t in tasks)
    assert sorted(chosen.values()) == [4, 4]


def test_only_keys_with_requests_in_flight_count_as_load():
    """Tasks whose requests all finished (an earlier step, a warm-up) weigh nothing: the next batch
    of new tasks is split evenly again; a request chosen for twice (backoff) counts once."""
    place = Placement()
    for k in range(6):  # an earlier step: 6 tasks, all on whatever replicas, all finished
        place.place(f"old-{k}", ["a", "b"], request_id=f"old/{k}")
        place.finished(f"old/{k}")
    new = [place.place(f"new-{k}", ["a", "b"], request_id=f"n/{k}") for k in range(4)]
    assert sorted(Counter(new).values()) == [2, 2]
    place.place("new-0", ["a", "b"], request_id="n/0")  # the same request again
    assert place._busy["new-0"] == 1
    place.finished("n/0")
    place.finished("n/0")  # reported twice: no harm
    assert "new-0" not in place._busy


def test_placements_are_forgotten_after_the_ttl_and_hashing_alone_is_available():
    clock = SimpleNamespace(now=0.0)
    place = Placement(ttl_s=60, clock=lambda: clock.now, max_keys=3)
    for k in range(3):
        place.place(f"t{k}", ["a", "b"])
    clock.now = 61
    place.place("late", ["a", "b"])
    assert list(place._held) == ["late"]  # the three unused for over a minute are dropped
    for k in range(10):
        place.place(f"u{k}", ["a", "b"])
    assert len(place._held) <= 3 + 1  # bounded
    pure = Placement(even=False)
    keys = [f"k{k}" for k in range(50)]
    assert all(pure.place(k, ["a", "b", "c"]) == ["a", "b", "c"][owner_index(k, ["a", "b", "c"])] for k in keys)


def test_a_placed_task_moves_only_when_its_replica_is_gone():
    place = Placement()
    keys = [f"t{k}" for k in range(30)]
    before = {k: place.place(k, ["a", "b", "c"]) for k in keys}
    after = {k: place.place(k, ["a", "b"]) for k in keys}
    assert all(after[k] == before[k] for k in keys if before[k] != "c")
    assert all(after[k] in ("a", "b") for k in keys)


def test_owner_moves_only_for_keys_of_a_removed_replica():
    keys = [f"t{k}" for k in range(200)]
    three = ["a", "b", "c"]
    before = {k: three[owner_index(k, three)] for k in keys}
    after = {k: ["a", "b"][owner_index(k, ["a", "b"])] for k in keys}
    assert all(after[k] == before[k] for k in keys if before[k] != "c")


def test_task_of_body_reads_single_and_batch_bodies():
    assert task_of_body({"trajectory": {"task": {"id": "a b/é"}}}) == "a%20b%2F%C3%A9"  # as the client quotes it
    assert task_of_body({"trajectories": [{"task": {"id": "t1"}}, {"task": {"id": "t2"}}]}) == "t1"
    assert task_of_body({"query": ["x"]}) is None and task_of_body([1]) is None


class _App:
    """The proxy behind the gate: records the scope and the body it was given."""

    def __init__(self) -> None:
        self.scope: dict | None = None
        self.body = b""
        self.after: dict = {}

    async def __call__(self, scope, receive, send):
        self.scope = scope
        while True:
            msg = await receive()
            self.body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        self.after = await receive()  # Ray Serve's proxy listens on for the client's disconnect
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _call(gate: ProxyGate, headers: list, chunks: list[bytes], path: str = "/v1/verify") -> tuple[list, int]:
    sent: list = []
    reads = {"n": 0}

    async def receive():
        reads["n"] += 1
        chunk = chunks.pop(0) if chunks else b""
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    async def send(msg):
        sent.append(msg)

    scope = {"type": "http", "method": "POST", "path": path, "headers": headers}
    asyncio.run(gate(scope, receive, send))
    return sent, reads["n"]


def _gate(monkeypatch, **kw) -> tuple[ProxyGate, _App]:
    monkeypatch.setenv(KEY_ENV, "s3cret")
    app = _App()
    return ProxyGate(app, api_key_env=KEY_ENV, **kw), app


def test_gate_refuses_before_reading_the_body(monkeypatch):
    gate, app = _gate(monkeypatch, max_body_bytes=1024)
    sent, reads = _call(gate, [(b"content-length", b"10")], [b"x" * 10])
    assert sent[0]["status"] == 401 and MARKER in sent[0]["headers"] and reads == 0 and app.scope is None
    sent, reads = _call(gate, [(b"authorization", b"Bearer s3cret"), (b"content-length", b"4096")], [b"x"])
    assert sent[0]["status"] == 413 and reads == 0 and app.scope is None
    sent, _ = _call(gate, [], [], path="/health")  # /health stays open
    assert sent[0]["status"] == 200


def test_gate_routes_by_task_header_or_body_and_drops_a_client_session(monkeypatch):
    gate, app = _gate(monkeypatch)
    auth = (b"authorization", b"Bearer s3cret")
    sess = session_header()
    _call(gate, [auth, (b"x-cua-task", b"t-7"), (sess, b"forged")], [b"{}"])
    assert dict(app.scope["headers"])[sess] == b"t-7" and [k for k, _ in app.scope["headers"]].count(sess) == 1
    assert app.body == b"{}"  # the body as sent
    body = json.dumps({"trajectory": {"task": {"id": "t-9"}, "steps": []}}).encode()
    gate, app = _gate(monkeypatch)
    _call(gate, [auth, (sess, b"forged")], [body[:10], body[10:]])
    assert dict(app.scope["headers"])[sess] == b"t-9" and app.body == body  # parsed, then replayed whole
    assert app.after["type"] == "http.request"  # then the client's own messages, not a made-up disconnect
    gate, app = _gate(monkeypatch)
    _call(gate, [auth], [b"not json"])
    assert sess not in dict(app.scope["headers"]) and app.body == b"not json"  # the replica answers the 422


async def test_the_gate_trims_the_proxys_heap_once_no_request_is_in_flight(monkeypatch):
    """Ray Serve's proxy holds the bodies it reads; the gate hands the freed pages back when the
    proxy has had no request in flight for `delay_s`, not while one is running."""
    gate, _ = _gate(monkeypatch)
    trims: list[int] = []
    gate.idle.delay_s, gate.idle.action = 0.1, lambda: trims.append(gate.inflight)
    go = asyncio.Event()

    class Held(_App):
        async def __call__(self, scope, receive, send):
            await go.wait()
            await super().__call__(scope, receive, send)

    gate.app = Held()

    async def one() -> None:
        chunks = [b"{}"]

        async def receive():
            return {"type": "http.request", "body": chunks.pop(0) if chunks else b"", "more_body": bool(chunks)}

        async def send(_msg):
            return None

        headers = [(b"authorization", b"Bearer s3cret"), (b"x-cua-task", b"t-1")]
        await gate({"type": "http", "method": "POST", "path": "/v1/verify", "headers": headers}, receive, send)

    both = asyncio.gather(one(), one())
    await asyncio.sleep(0.25)
    assert gate.inflight == 2 and trims == []
    go.set()
    await both
    assert gate.inflight == 0 and trims == []
    await asyncio.sleep(0.25)
    assert trims == [0]


def test_metrics_of_replicas_add_up_and_health_counts_replicas():
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from serving.reward_service.metrics import ServiceMetrics
    from serving.reward_service.serve_board import Board, replicas_gauge, sum_exposition

    texts = []
    for scored in (3, 5):
        m = ServiceMetrics()
        m.verifications.labels(status="scored").inc(scored)
        m.requests.labels(endpoint="/v1/verify", status="200").inc(scored)
        m.latency.labels(endpoint="/v1/verify").observe(0.3)
        texts.append(generate_latest(m.registry).decode())
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(sum_exposition(texts, [replicas_gauge(2, 3)]).decode())
               for s in f.samples}
    assert samples[("cua_reward_verifications_total", (("status", "scored"),))] == 8
    assert samples[("cua_reward_request_latency_seconds_count", (("endpoint", "/v1/verify"),))] == 2
    assert samples[("cua_reward_replicas", (("state", "reporting"),))] == 2
    assert samples[("cua_reward_replicas", (("state", "total"),))] == 3
    assert not any(name.endswith("_created") for name, _ in samples)

    board = Board("app", "Dep", "r-a", dict)
    own = {"status": "ok", "queue_depth": 1, "queue_capacity": 24, "replica": "r-a"}
    peer = {"status": "ok", "queue_depth": 2, "queue_capacity": 24, "replica": "r-b"}

    async def view(peers, total):
        return [{"health": p} for p in peers], total

    board.view = lambda: view([peer], 2)  # type: ignore[method-assign]
    health = asyncio.run(board.health(own))
    assert health["queue_depth"] == 3 and health["queue_capacity"] == 48 and health["replica"] == "r-a"
    assert health["status"] == "ok" and health["replicas"] == {"reporting": 2, "ready": 2, "total": 2}
    board.view = lambda: view([], 2)  # type: ignore[method-assign]
    assert asyncio.run(board.health(own))["status"] == "degraded"  # one of two replicas reports


def test_gate_answers_typed_503_for_ray_serves_own_404_on_service_paths(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "s3cret")
    auth = (b"authorization", b"Bearer s3cret")

    def app_answering(status: int, headers: list):
        async def app(scope, receive, send):
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": b"Path not found"})
        return app

    for status, headers, path, want in ((404, [], "/v1/verify", 503), (503, [], "/health", 503),
                                        (404, [], "/elsewhere", 404),  # not the service's path: Ray's
                                        (404, [(b"x-cua-replica", b"r")], "/v1/verify", 404)):  # the replica's
        gate = ProxyGate(app_answering(status, headers), api_key_env=KEY_ENV)
        sent, _ = _call(gate, [auth, (b"x-cua-task", b"t")], [b"{}"], path=path)
        assert sent[0]["status"] == want and MARKER in sent[0]["headers"], (path, sent[0])
        bodies = [m for m in sent if m["type"] == "http.response.body"]
        if want == 503:
            assert dict(sent[0]["headers"])[b"retry-after"] == b"5" and len(bodies) == 1
            assert json.loads(bodies[0]["body"])["error"]["type"] == "shutting_down"
        else:
            assert bodies[0]["body"] == b"Path not found"


def test_board_reads_peers_and_controller_once_per_period():
    from serving.reward_service.serve_board import Board

    board = Board("app", "Dep", "r-a", dict)
    calls = {"peers": 0, "total": 0}

    def peers():
        calls["peers"] += 1
        return []

    def total():
        calls["total"] += 1
        return 1

    board.peers, board.total = peers, total  # type: ignore[method-assign]

    async def flood():
        return await asyncio.gather(*(board.health({"status": "ok", "queue_depth": 0}) for _ in range(20)))

    answers = asyncio.run(flood())
    assert calls == {"peers": 1, "total": 1}  # 20 open /health calls: one read of the GCS and controller
    assert all(a["replicas"] == {"reporting": 1, "ready": 1, "total": 1} for a in answers)
