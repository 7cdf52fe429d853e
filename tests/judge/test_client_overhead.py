"""The caches and shortcuts that keep the client's per-call CPU low: each gives exactly what the
uncached path gives (same schema, same validation, same request), and is keyed by what it depends on."""
from __future__ import annotations

import asyncio
import enum
import io
import socket
import time
from http.client import HTTPConnection

import pytest
from PIL import Image

from reward.echo_judge import EchoJudgeServer
from verifier import narrowing, prompts
from verifier.judge import endpoints, openai_compat
from verifier.judge.base import ImagePart, Message
from verifier.judge.config import JudgeConfig
from verifier.judge.endpoints import EndpointPool
from verifier.judge.images import ImageEncoder
from verifier.judge.jsonbody import JsonSafe, dumps_body
from verifier.judge.openai_compat import OpenAICompatJudge
from verifier.judge.schema import ReplyParseError, json_schema_for, model_schema, parse_reply
from verifier.perf.figures import image_placeholder
from verifier.perf.latency_judge import LatencyJudge
from verifier.schemas import EvidenceBatch, RelevanceBatch, Rescoring, TaskValidity
from verifier.trajectory import Screenshot


class _Shade(str, enum.Enum):
    dark = "dark"


def cold(base, ids, shots=()):
    """`for_call` + its schema with every cache emptied first (what the code did before caching)."""
    narrowing.for_call.cache_clear()
    narrowing._item_for.cache_clear()
    narrowing._relevance_template.cache_clear()
    model_schema.cache_clear()
    model = narrowing.for_call(base, ids, shots)
    return model, model_schema(model)  # pydantic's path, never a template's


@pytest.mark.parametrize("base", [RelevanceBatch, EvidenceBatch, Rescoring])
def test_per_rubric_item_classes_give_the_uncached_schema_and_checks(base):
    rubric_a, rubric_b = ("c1", "c2", "c3"), ("c1", "c2", "c9")  # same length, one id differs
    calls = [(rubric_a, (1,)), (rubric_a, (2, 3)), (rubric_b, (2, 3)), (rubric_a, (4,))]
    if base is not RelevanceBatch:
        calls = [(ids, ()) for ids, _ in calls]
    expected = [cold(base, ids, shots)[1] for ids, shots in calls]
    narrowing.for_call.cache_clear()
    narrowing._item_for.cache_clear()
    warm = [narrowing.for_call(base, ids, shots) for ids, shots in calls]
    assert [json_schema_for(m) for m in warm] == expected
    assert str(expected[1]) != str(expected[2])  # the enum follows the rubric, not its length
    if base is RelevanceBatch:  # a reply naming another rubric's id is refused, as before
        reply = ('{"rows": [{"screenshot": 2, "scores": [{"criterion_id": "c1", "score": 1}, '
                 '{"criterion_id": "c2", "score": 1}, {"criterion_id": "c9", "score": 1}]}, '
                 '{"screenshot": 3, "scores": [{"criterion_id": "c1", "score": 1}, '
                 '{"criterion_id": "c2", "score": 1}, {"criterion_id": "c9", "score": 1}]}]}')
        assert len(parse_reply(reply, warm[2]).rows) == 2
        with pytest.raises(ReplyParseError) as warm_err:
            parse_reply(reply, warm[1])
        with pytest.raises(ReplyParseError) as cold_err:
            parse_reply(reply, cold(base, rubric_a, (2, 3))[0])
        assert warm_err.value.feedback == cold_err.value.feedback  # the re-ask text is unchanged


def test_template_edited_mid_run_is_not_rendered_under_the_old_hash(tmp_path, monkeypatch):
    """Templates are read once per process, like the hash every result records for them."""
    (tmp_path / "t.j2").write_text("{# id: t version: 1 #}\nold {{ x }}", encoding="utf-8")
    monkeypatch.setattr(prompts, "prompts_dir", lambda: tmp_path)
    prompts.clear_caches()
    try:
        first = prompts.render("t.j2", x=1)
        (tmp_path / "t.j2").write_text("{# id: t version: 1 #}\nnew {{ x }}", encoding="utf-8")
        second = prompts.render("t.j2", x=1)
        assert first == second and first.text == "old 1"
    finally:
        prompts.clear_caches()


def test_prompts_dir_is_resolved_once():
    assert prompts.prompts_dir() is prompts.prompts_dir()
    assert (prompts.prompts_dir() / "context.user.j2").is_file()


def test_one_tls_context_per_process_with_the_sdk_checks(monkeypatch):
    built = []
    real = endpoints.create_ssl_context

    def counting():
        built.append(1)
        return real()

    monkeypatch.setattr(endpoints, "create_ssl_context", counting)
    endpoints.shared_ssl_context.cache_clear()
    try:
        pool = EndpointPool(JudgeConfig(base_urls=["https://a.invalid/v1", "https://b.invalid/v1"], model="m"))

        async def clients():  # a fresh event loop each time, as offline scoring's asyncio.run
            found = [e.client for e in pool._pool().endpoints]
            await pool.aclose()
            return found

        made = asyncio.run(clients()) + asyncio.run(clients())
        assert len(made) == 4 and len(built) == 1  # four clients, one CA bundle read
        ctx = endpoints.shared_ssl_context()
        assert ctx.verify_mode.name == "CERT_REQUIRED" and ctx.check_hostname
    finally:
        endpoints.shared_ssl_context.cache_clear()


def png(color: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), color).save(buf, format="PNG")
    return buf.getvalue()


async def test_prepared_images_render_on_the_loop_with_the_same_request(monkeypatch):
    hops = []
    real = asyncio.to_thread

    async def counted(fn, *args, **kwargs):
        if fn.__name__ == "_render":  # (the SDK hops for its own reasons too)
            hops.append(fn.__name__)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(openai_compat.asyncio, "to_thread", counted)
    server = LatencyJudge(latency_s=0.0).start()
    judge = OpenAICompatJudge(JudgeConfig(base_urls=[server.url], model="judge", timeout_s=30))
    try:
        shot = Screenshot.from_bytes(png((1, 2, 3)), step=1)
        msgs = [Message.system("rules"), Message.user("look", ImagePart(screenshot=shot, label="Screenshot 1"))]
        assert not judge.encoder.ready(shot)
        await judge.complete(msgs, TaskValidity, stage="t")  # new image: prepared in a worker thread
        assert hops == ["_render"] and judge.encoder.ready(shot)
        await judge.complete(msgs, TaskValidity, stage="t")  # prepared: no hop
        await judge.complete([Message.system("rules"), Message.user("text only")], TaskValidity, stage="t")
        assert hops == ["_render"]
        texts = [r.text for r in server.log]
        assert texts[0] == texts[1] and "<image:" in texts[0]  # the judge got the same request
        fresh = Screenshot.from_bytes(png((1, 2, 3)), step=2)  # same bytes, hash not computed yet
        assert not judge.encoder.ready(fresh)  # never hashes on the loop
    finally:
        await judge.aclose()
        server.stop()


def test_echo_judge_replies_without_nagle_delay():
    """Headers and body leave in two writes: with Nagle on, the body of every reply on a reused
    connection waited for the client's delayed ACK (40 ms), which the benchmark counted as client
    overhead. The accepted socket must have TCP_NODELAY, as uvicorn's (vLLM) has."""
    seen: list[int] = []
    with EchoJudgeServer() as server:
        handler = server.httpd.RequestHandlerClass
        setup = handler.setup

        def spy(self):
            setup(self)
            seen.append(self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        handler.setup = spy
        conn = HTTPConnection(server.httpd.server_address[0], server.httpd.server_port, timeout=10)
        conn.request("POST", "/v1/models", body=b"{}", headers={"Content-Type": "application/json"})
        conn.getresponse().read()
        conn.close()
    assert seen and all(seen)


def sdk_bytes(body) -> bytes:
    # what the SDK sends for a JSON body (a private helper, from openai 2.17; older SDKs lack it)
    openapi_dumps = pytest.importorskip("openai._utils._json").openapi_dumps

    return openapi_dumps(body)


def test_request_body_bytes_are_the_sdks_with_images_spliced_unescaped():
    enc = ImageEncoder(max_side=None)
    url = enc.encode(Screenshot.from_bytes(png((9, 9, 9)), step=1)).url
    assert isinstance(url, JsonSafe) and url.startswith("data:image/png;base64,")
    tricky = 'quote " backslash \\ newline \n nul \x00 unit-sep \x1f wide — é 😀 and a fake \\u001f0:0'
    body = {"model": "judge", "temperature": 0.0, "seed": None, "stop": ("a", "b"),
            "messages": [{"role": "system", "content": tricky},
                         {"role": "user", "content": [{"type": "text", "text": tricky},
                                                      {"type": "image_url", "image_url": {"url": url}, "uuid": "u"},
                                                      {"type": "image_url", "image_url": {"url": url}}]}],
            "response_format": {"type": "json_schema", "json_schema": {"schema": {"enum": [1, 2.5, True]}}}}
    assert dumps_body(body) == sdk_bytes(body)
    assert dumps_body({"plain": tricky}) == sdk_bytes({"plain": tricky})  # nothing to splice
    with pytest.raises(ValueError):  # NaN is refused, as the SDK refuses it
        dumps_body({"x": float("nan"), "u": url})


async def test_the_judge_receives_the_sdk_serialisation():
    """End to end: what reaches the server parses to the request the client built."""
    server = LatencyJudge(latency_s=0.0).start()
    judge = OpenAICompatJudge(JudgeConfig(base_urls=[server.url], model="judge", timeout_s=30))
    try:
        shot = Screenshot.from_bytes(png((4, 5, 6)), step=1)
        await judge.complete([Message.system("règles"), Message.user("look", ImagePart(screenshot=shot))],
                             TaskValidity, stage="t")
        url = judge.encoder.encode(shot).url
        assert server.log[0].text == f"<|system|>\nrègles\n<|user|>\nlook\n{image_placeholder(url)}"
        assert server.log[0].payload_bytes == len("règles") + len("look") + len(url)
    finally:
        await judge.aclose()
        server.stop()


def test_a_text_that_spells_the_splice_token_falls_back_to_the_plain_bytes(monkeypatch):
    from verifier.judge import jsonbody

    monkeypatch.setattr(jsonbody.random, "getrandbits", lambda bits: 0xABC)
    url = JsonSafe("data:image/png;base64,AAAA")
    forged = f"\x1f{0xABC:016x}:0"  # the token a predictable generator would draw
    body = {"messages": [{"content": [{"text": forged}, {"image_url": {"url": url}}]}]}
    assert dumps_body(body) == sdk_bytes(body)


def test_prompt_records_are_computed_once_and_immutable():
    from verifier.rendering import infos

    first = infos("relevance.system.j2")
    assert first is infos("relevance.system.j2") and isinstance(first, tuple)
    assert {i.id for i in first} >= {prompts.prompt_info("relevance.system.j2").id}


def test_shared_system_prompt_is_rendered_once_per_permission_profile():
    from verifier import rendering
    from verifier.prompts import render
    from verifier.schemas import PermissionProfile, Rubric

    rendering._system_prompt.cache_clear()
    granted = PermissionProfile(permission="granted", permission_quote="you may buy it")
    rubric = Rubric.model_validate({"criteria": [], "permission": granted.model_dump()})
    other = rubric.model_copy(update={"permission": PermissionProfile()})
    first = rendering.system_prompt(rubric)
    assert rendering.system_prompt(rubric) is first  # served from the cache
    assert first == render(rendering.SYSTEM_TEMPLATE, rules=True, profile=granted)  # same as uncached
    assert "you may buy it" in first.text and first.text != rendering.system_prompt(other).text
    assert rendering.system_prompt(other) == render(rendering.SYSTEM_TEMPLATE, rules=True, profile=PermissionProfile())
    assert rendering.system_prompt(None) == render(rendering.SYSTEM_TEMPLATE, rules=False)
    assert rendering._system_prompt.cache_info().currsize == 3


async def test_screenshots_are_prepared_while_the_rubric_call_waits(monkeypatch):
    """`verify` has the judge hash and encode every distinct screenshot in a worker thread while
    the rubric call (no image) is in flight, so the relevance fan-out after it renders on the
    event loop from the cache: no image work queued behind the rubric on the critical path."""
    from verifier.config import VerifierConfig
    from verifier.perf.shots import tagged_png, trajectory
    from verifier.pipeline import verify

    hops, prepared_at, first_image_call = [], [], []
    real = asyncio.to_thread

    async def counted(fn, *args, **kwargs):
        if fn.__name__ == "_render":
            hops.append(fn.__name__)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(openai_compat.asyncio, "to_thread", counted)
    server = LatencyJudge(latency_s=0.3).start()
    judge = OpenAICompatJudge(JudgeConfig(base_urls=[server.url], model="judge", timeout_s=30))
    prepare, complete = judge.prepare_images, judge.complete

    def timed_prepare(shots):
        n = prepare(shots)
        prepared_at.append((time.monotonic(), n))
        return n

    async def spy(messages, output_model, *, stage, sampling=None):
        if stage == "relevance" and not first_image_call:
            first_image_call.append(time.monotonic())
        return await complete(messages, output_model, stage=stage, sampling=sampling)

    monkeypatch.setattr(judge, "prepare_images", timed_prepare)
    monkeypatch.setattr(judge, "complete", spy)
    sources = [tagged_png(png(c), "x") for c in ((200, 10, 10), (10, 200, 10), (10, 10, 200))]
    traj = trajectory(8, sources, run="prefetch")  # 8 screenshots, 6 distinct (every fourth repeats)
    try:
        result = await verify(traj, VerifierConfig(), judge=judge)
        rubric_end = min(r.end for r in server.log)  # the first request is the rubric call
        (when, n), = prepared_at
        assert n == len(traj.distinct_screenshots()) == 6 and judge.encoder.prepared == 6
        assert when < rubric_end <= first_image_call[0]  # ready before the rubric's reply came back
        assert hops == []  # so no call hopped to a thread to encode
        assert result.usage.calls == len(server.log)
    finally:
        await judge.aclose()
        server.stop()


def test_prepare_images_skips_unreadable_shots_and_respects_the_cache_size():
    judge = OpenAICompatJudge(JudgeConfig(base_urls=["http://127.0.0.1:9/v1"], model="judge", image_cache_size=2,
                                          image_max_side=16))
    good = [Screenshot.from_bytes(png((k, 0, 0)), step=k) for k in range(3)]
    bad = Screenshot.from_bytes(b"\x89PNG\r\n\x1a\nnot really", step=9)
    assert judge.prepare_images([bad, good[0], good[0], good[1], good[2]]) == 2  # the limit: 2 distinct
    assert judge.encoder.ready(good[0]) and judge.encoder.ready(good[1]) and not judge.encoder.ready(good[2])
    assert not judge.encoder.ready(bad)  # left for the call that sends it to report


@pytest.mark.parametrize("value", [2.5e-7, 1e16, 1.5, -0.0, 2**64 + 1, {1: "int key"}, "lone \ud800",
                                   {"nested": [(1, 2), {"k": [0.1, 3e-9]}]}, "\x7f \u2028 \x00 \U0001f600",
                                   float("nan"), [1.0, float("inf")], [True, None, 0], _Shade.dark,
                                   {"deep": [{"n": 1e-5}, {"m": [[2e20]]}]}])
def test_skeleton_bytes_are_the_sdks_for_values_orjson_spells_otherwise(value):
    """The fast serialiser is used only where its bytes are json's: exponent floats, big ints,
    non-string keys and lone surrogates go through json (whose error, if any, is the SDK's)."""
    url = JsonSafe("data:image/png;base64,AAAA")
    body = {"v": value, "u": url, "w": [value]}
    try:
        expected = sdk_bytes(body)
    except (ValueError, TypeError) as exc:
        with pytest.raises(type(exc)):
            dumps_body(body)
    else:
        assert dumps_body(body) == expected


def test_reply_budget_walks_each_schema_object_once_and_never_answers_for_another(monkeypatch):
    """The worst-case walk is remembered by schema object: the same object is walked once, an
    equal-looking new object with another bound gets its own answer."""
    from verifier.judge import schema as schema_mod

    walks = []
    real = schema_mod.worst_case_chars
    monkeypatch.setattr(schema_mod, "worst_case_chars", lambda s: walks.append(s) or real(s))

    def budget(s):
        return schema_mod.reply_token_budget(s, floor=1, cap=10_000)

    short = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 40}}, "required": ["a"],
             "additionalProperties": False}
    first = budget(short)
    assert budget(short) == first and sum(w is short for w in walks) == 1
    longer = {**short, "properties": {"a": {"type": "string", "maxLength": 4000}}}
    assert budget(longer) > first and sum(w is longer for w in walks) == 1
    for _ in range(schema_mod._WORST_CASE_SIZE + 5):  # bounded: old entries go
        budget({"type": "integer", "minimum": 0, "maximum": 9})
    assert len(schema_mod._WORST_CASE) <= schema_mod._WORST_CASE_SIZE
