"""The served-model facts (`verifier.judge.served`) and the check-judge lines that do not need an
engine: read from a loopback server that answers like vLLM (its routes, its error texts). The same
checks against real vLLM are in tests/e2e/test_check_judge_engine.py."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from serving.presets import PRESETS
from verifier.config import VerifierConfig
from verifier.errors import ConfigError
from verifier.judge.config import JudgeConfig
from verifier.judge.served import PRESET_LIMITS, CharBoundTokenizer, RemoteTokenizer, discover, discover_for
from verifier.judgecheck import _context_check, _images_check, refuse_doomed_run, run_checks


class FakeVllm:
    """GET /v1/models, POST /tokenize (one token per 3 bytes), chat with an image limit, /metrics."""

    def __init__(self, *, max_model_len: int | None = 32768, max_images: int = 16, tokenize: bool = True) -> None:
        self.max_model_len, self.max_images, self.tokenize, self.tokenized = max_model_len, max_images, tokenize, 0
        self.count_answer: object = None  # None: the real count; "fail": HTTP 500; else this as the count
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _send(self, code: int, body) -> None:
                data = json.dumps(body).encode() if not isinstance(body, bytes) else body
                self.send_response(code)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    entry = {"id": "judge", "object": "model"}
                    if fake.max_model_len is not None:
                        entry["max_model_len"] = fake.max_model_len
                    return self._send(200, {"object": "list", "data": [entry]})
                return self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/tokenize" and fake.tokenize:
                    fake.tokenized += 1
                    if fake.count_answer == "fail":
                        return self._send(500, {"error": "tokenizer crashed"})
                    count = -(-len(body["prompt"].encode()) // 3) if fake.count_answer is None else fake.count_answer
                    return self._send(200, {"count": count, "max_model_len": 1})
                if self.path == "/v1/chat/completions":
                    images = sum(p.get("type") == "image_url" for m in body["messages"]
                                 for p in (m["content"] if isinstance(m["content"], list) else []))
                    if images > fake.max_images:
                        return self._send(400, {"error": {"message": f"At most {fake.max_images} image(s) may be "
                                                          "provided in one prompt.", "code": 400}})
                    return self._send(200, {"id": "x", "object": "chat.completion", "model": "judge", "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]})
                return self._send(404, {"error": "not found"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def vllm():
    servers: list[FakeVllm] = []

    def make(**kw) -> FakeVllm:
        servers.append(FakeVllm(**kw))
        return servers[-1]
    yield make
    for s in servers:
        s.close()


def test_presets_mirror_the_serving_presets() -> None:
    assert set(PRESET_LIMITS) == set(PRESETS)
    for name, p in PRESETS.items():
        mine = PRESET_LIMITS[name]
        assert (mine.max_model_len, mine.max_images, mine.max_pixels, mine.min_pixels) == \
            (p.max_model_len, p.max_images, p.max_pixels, p.min_pixels), name
        assert p.max_pixels % (mine.token_px ** 2) == 0, name  # the token size matches the family


def test_discover_reads_the_context_and_finds_the_tokenizer(vllm) -> None:
    server = vllm()
    facts = discover(server.url, "judge")
    assert facts.listed is True and facts.server_kind == "vllm"
    assert facts.context_tokens == 32768 and facts.context_source == "server"
    assert isinstance(facts.tokenizer, RemoteTokenizer) and facts.tokenizer_source == "server"
    long_text = "x" * 9000
    assert facts.tokenizer.count(long_text) == 3000 and facts.tokenizer.count(long_text) == 3000
    assert server.tokenized == 2  # the probe and one count: the second count came from the cache
    assert facts.tokenizer.count("short") == 5  # below `exact_above`: the byte bound, no request


@pytest.mark.parametrize("answer", ["fail", 0, -5, 1, "12", True])
def test_a_failing_or_implausible_tokenize_falls_back_to_the_character_bound(vllm, answer) -> None:
    """Issue 38 §8 and §11: a /tokenize that fails mid-run made every long call count a token per
    byte (every rollout unscored with the judge healthy), and a count of 0 or below was believed
    (every prompt "fits"). Both now give the character bound the budget uses without a tokenizer."""
    server = vllm()
    facts = discover(server.url, "judge", chars_per_token=2.5)
    text = "x" * 9000
    server.count_answer = answer
    assert facts.tokenizer.count(text) == CharBoundTokenizer(2.5).count(text) == 3600  # not 9000, a token per byte
    assert facts.tokenizer.fallbacks == 1
    server.count_answer = None  # the endpoint recovers: the fallback was not cached
    assert facts.tokenizer.count(text) == 3000


def test_config_and_preset_stand_in_for_what_the_server_does_not_say(vllm) -> None:
    server = vllm(max_model_len=None, tokenize=False)
    facts = discover(server.url, "judge", preset="qwen3-vl-8b")
    assert facts.context_tokens == 65536 and facts.context_source == "preset"
    assert isinstance(facts.tokenizer, CharBoundTokenizer) and facts.image_limits.token_px == 32
    assert discover(server.url, "judge", context_tokens=20000).context_tokens == 20000
    assert discover(server.url, "judge").context_tokens is None  # unknown: nothing is enforced


def test_a_model_the_server_does_not_serve_is_refused_before_any_run(vllm) -> None:
    server = vllm()
    facts = discover(server.url, "wrong-name")
    assert facts.listed is False and facts.listed_models == ["judge"] and facts.context_tokens is None

    class Judge:
        config = JudgeConfig(base_urls=[server.url], model="wrong-name")
    with pytest.raises(ConfigError, match="--model with one of those"):
        refuse_doomed_run(Judge())


def test_image_limit_failure_names_the_flag_and_score_refuses_to_start(vllm) -> None:
    server = vllm(max_images=1)
    cfg = JudgeConfig(base_urls=[server.url], model="judge")
    assert _images_check(cfg, 1).status == "pass"
    two = _images_check(cfg, 2)
    assert two.status == "fail" and "allows 1 image" in two.detail and "--limit-mm-per-prompt" in two.fix

    class Judge:
        config = cfg
    with pytest.raises(ConfigError, match="limit-mm-per-prompt"):
        refuse_doomed_run(Judge())
    server.max_images = 16
    refuse_doomed_run(Judge())  # the same server with room for the final screenshots: no objection


def test_check_lines_for_a_wrong_model_and_a_short_context(vllm) -> None:
    server = vllm(max_model_len=4096)
    wrong = run_checks(JudgeConfig(base_urls=[server.url], model="nope"))
    assert [c.status for c in wrong] == ["fail"] and "--model judge" in wrong[0].line()
    cfg = JudgeConfig(base_urls=[server.url], model="judge")
    short = _context_check(discover_for(cfg), cfg, VerifierConfig(), None)
    assert short.status == "fail" and "4096" in short.detail and "--max-model-len" in short.fix
    server.max_model_len = 131072
    roomy = _context_check(discover_for(cfg), cfg, VerifierConfig(), None)
    assert roomy.status == "pass" and "server tokenizer" in roomy.detail
