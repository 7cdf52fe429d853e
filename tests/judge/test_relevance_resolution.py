"""The relevance fan-out's screenshot size is a knob of its own; every other stage keeps full size."""
from __future__ import annotations

import asyncio
import base64
import io
import threading
from collections import defaultdict
from typing import Any

from PIL import Image

from reward.echo_judge import EchoJudgeServer
from serving.perf.loadtest import png
from verifier.config import VerifierConfig
from verifier.judge.config import JudgeConfig
from verifier.judge.openai_compat import OpenAICompatJudge
from verifier.pipeline import verify
from verifier.trajectory import Screenshot, Step, Task, Trajectory


class SizeRecordingEcho(EchoJudgeServer):
    """The echo judge, recording the pixel size of every image per reply schema (stage)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.sizes: dict[str, set[tuple[int, int]]] = defaultdict(set)
        self._size_lock = threading.Lock()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "?")
        for msg in body.get("messages", []):
            for part in msg.get("content") if isinstance(msg.get("content"), list) else []:
                if part.get("type") == "image_url":
                    data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                    with Image.open(io.BytesIO(data)) as img, self._size_lock:
                        self.sizes[name].add(img.size)
        return super().answer(path, body)


def _trajectory() -> Trajectory:
    shots = [Screenshot.from_bytes(png((20 * k, 90, 160), (1440, 900)), step=k) for k in (1, 2)]
    return Trajectory(task=Task(id="t", instruction="Find the opening hours of the museum"),
                      steps=[Step(index=k, action="click", arguments={"x": k}) for k in (1, 2)],
                      screenshots=shots, final_answer="9 to 5")


def _sizes(**judge: Any) -> dict[str, set[tuple[int, int]]]:
    with SizeRecordingEcho() as server:
        async def run() -> None:
            j = OpenAICompatJudge(JudgeConfig(base_urls=[server.url], model="echo", **judge))
            try:
                await verify(_trajectory(), VerifierConfig(), judge=j)
            finally:
                await j.aclose()
        asyncio.run(run())
        return dict(server.sizes)


def test_relevance_screenshots_are_sent_smaller_only_when_configured():
    default = _sizes()
    assert default and all(sizes == {(1440, 900)} for sizes in default.values())  # unchanged by default
    coarse = _sizes(relevance_image_max_side=480)
    relevance = {name for name in coarse if "elevance" in name}
    assert relevance, coarse.keys()
    for name, sizes in coarse.items():
        assert sizes == ({(480, 300)} if name in relevance else {(1440, 900)}), (name, sizes)
