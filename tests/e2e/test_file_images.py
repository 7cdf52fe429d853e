"""Screenshots as ``file://`` URLs against the real vLLM server (``--allowed-local-media-path``).

For a judge on the same host the client writes each screenshot once into the media directory and
sends its path instead of base64; the server must load it (the image costs prompt tokens), and a
path outside the allowed directory must be refused (a typed error, not a silent text-only call).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from pydantic import BaseModel, Field

from verifier.errors import JudgeError
from verifier.judge import ImagePart, Message, Sampling
from verifier.judge.openai_compat import OpenAICompatJudge
from verifier.loaders import load_trajectory
from verifier.pipeline import verify
from verifier.trajectory import Screenshot

pytestmark = pytest.mark.engine
REPO = Path(__file__).resolve().parents[2]


class Note(BaseModel):
    ok: bool
    note: str = Field(max_length=20)


def _msgs(shot: Screenshot | None) -> list[Message]:
    parts = [ImagePart(screenshot=shot, label="Screenshot 1")] if shot else []
    return [Message.system("Answer in JSON."), Message.user("What is shown?", *parts)]


async def test_file_urls_reach_the_engine_and_stay_inside_the_media_dir(engine, tmp_path):
    judge = OpenAICompatJudge(engine.judge_config(image_media_dir=str(engine.media_dir), image_uuid=True))
    shot = Screenshot.from_image(Image.new("RGB", (320, 200), (10, 200, 30)), step=1)
    sampling = Sampling(max_tokens=128)
    try:
        text_only = await judge.complete(_msgs(None), Note, stage="t", sampling=sampling)
        with_image = await judge.complete(_msgs(shot), Note, stage="t", sampling=sampling)
        assert with_image.usage.prompt_tokens > text_only.usage.prompt_tokens  # the file was loaded
        sent = judge.encoder.encode(shot)
        assert sent.url.startswith("file://") and (engine.media_dir / f"{sent.sha256}.png").is_file()

        outside = OpenAICompatJudge(engine.judge_config(image_media_dir=str(tmp_path), transport_retries=0))
        with pytest.raises(JudgeError, match="rejected"):
            await outside.complete(_msgs(shot), Note, stage="t", sampling=sampling)
        await outside.aclose()

        traj = load_trajectory(REPO / "examples" / "trajectories" / "library-hours-success")
        result = await verify(traj, judge=judge)
        assert result.usage.calls > 0
        assert not [d for d in result.degraded if "image" in str(d).lower()]
        names = {p.name for p in engine.media_dir.iterdir()}
        assert {f"{judge.encoder.encode(s).sha256}.png" for s in traj.screenshots} <= names
    finally:
        await judge.aclose()
