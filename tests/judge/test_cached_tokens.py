"""The judge's own token counts per verification, with the prefix-cache share where reported."""
from __future__ import annotations

import asyncio
from typing import Any

from reward.echo_judge import EchoJudgeServer
from serving.perf.loadtest import trajectory
from verifier.config import VerifierConfig
from verifier.judge.config import JudgeConfig
from verifier.judge.openai_compat import OpenAICompatJudge
from verifier.pipeline import verify


class CachingEcho(EchoJudgeServer):
    """The echo judge reporting 60 of its 100 prompt tokens as served from a prefix cache."""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, reply = super().answer(path, body)
        if status == 200 and self.report_cached:
            reply["usage"]["prompt_tokens_details"] = {"cached_tokens": 60}
        return status, reply

    report_cached = True


def _verify(url: str) -> Any:
    async def run() -> Any:
        judge = OpenAICompatJudge(JudgeConfig(base_urls=[url], model="echo"))
        try:
            return await verify(trajectory(1), VerifierConfig(), judge=judge)
        finally:
            await judge.aclose()
    return asyncio.run(run())


def test_usage_records_prompt_cached_and_completion_tokens_per_stage():
    with CachingEcho() as server:
        result = _verify(server.url)
        u = result.usage
        assert u.calls > 0 and u.prompt_tokens == 100 * u.calls and u.completion_tokens > 0
        assert u.cached_prompt_tokens == 60 * u.calls
        assert all(s.cached_prompt_tokens == 60 * s.calls for s in u.per_stage.values() if s.calls)
        server.report_cached = False
        silent = _verify(server.url).usage
        assert silent.cached_prompt_tokens is None and silent.prompt_tokens == 100 * silent.calls
