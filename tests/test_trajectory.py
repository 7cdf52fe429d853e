"""The trajectory model: lazy screenshots, hashing, size guards, JSON round-trip, step numbering."""
from __future__ import annotations

import base64
import hashlib
import io
import struct
import zlib

import pytest
from PIL import Image
from pydantic import ValidationError

from verifier.errors import ScreenshotError
from verifier.trajectory import RunStatus, Screenshot, Step, Task, Trajectory


def png(color: str = "red", size: tuple[int, int] = (8, 6)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def huge_png_header(width: int, height: int) -> bytes:
    """A tiny file that claims enormous dimensions (a decompression bomb's header)."""
    raw = png()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    start = raw.index(b"IHDR") - 4
    patched = struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk) & 0xFFFFFFFF)
    return raw[:start] + patched + raw[start + 25:]


def data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def make_traj(shots: list[Screenshot], **kw) -> Trajectory:
    steps = [Step(index=1, action="click", arguments={"x": 1}, thought="go"),
             Step(index=2, action="terminate", arguments={"answer": "42"})]
    return Trajectory(task=Task(id="t1", instruction="find it", start_url="https://a.example"),
                      steps=steps, screenshots=shots, **kw)


@pytest.mark.parametrize("kind", ["path", "data_url", "bytes", "pil"])
def test_json_round_trip_every_source(tmp_path, kind):
    data = png("blue")
    f = tmp_path / "s.png"
    f.write_bytes(data)
    shot = {"path": lambda: Screenshot.from_path(f, step=1),
            "data_url": lambda: Screenshot.from_data_url(data_url(data), step=1),
            "bytes": lambda: Screenshot.from_bytes(data, step=1),
            "pil": lambda: Screenshot.from_image(Image.open(io.BytesIO(data)), step=1)}[kind]()
    traj = make_traj([shot], final_answer="42", load_warnings=["w"])
    back = Trajectory.model_validate_json(traj.to_json())
    assert back.model_dump(exclude={"screenshots"}) == traj.model_dump(exclude={"screenshots"})
    got = back.screenshots[0]
    assert (got.step, got.timing) == (1, "before")
    assert got.image().convert("RGB").getpixel((0, 0)) == (0, 0, 255)
    if kind in ("bytes", "pil"):  # in-memory sources are embedded, never silently dropped
        assert got.data_url is not None and got.data_url.startswith("data:image/png;base64,")
        assert '"data_url":"data:image/png' in traj.model_dump_json()
    if kind != "pil":  # the original bytes survive, so the hash does too
        assert got.sha256 == shot.sha256 == hashlib.sha256(data).hexdigest()


def test_sha256_equal_for_identical_bytes_and_stable():
    data, other = png("red"), png("green")
    a = Screenshot.from_bytes(data, step=1)
    b = Screenshot.from_data_url(data_url(data), step=2, timing="after")
    c = Screenshot.from_bytes(other, step=1)
    assert a.sha256 == b.sha256 == hashlib.sha256(data).hexdigest()
    assert a.sha256 != c.sha256
    # PIL sources are hashed through a PNG encode that is deterministic
    img = Image.new("RGB", (5, 5), "white")
    assert Screenshot.from_image(img, step=1).sha256 == Screenshot.from_image(img.copy(), step=1).sha256


def test_distinct_screenshots_groups_duplicates():
    data = png()
    traj = make_traj([Screenshot.from_bytes(data, step=1), Screenshot.from_bytes(png("blue"), step=2),
                      Screenshot.from_bytes(data, step=2, timing="after")])
    groups = traj.distinct_screenshots()
    assert sorted(groups.values()) == [[1, 3], [2]]


def test_screenshots_are_lazy(tmp_path):
    f = tmp_path / "s.png"
    f.write_bytes(png())
    shot = Screenshot.from_path(f, step=1)
    assert shot._raw is None
    assert shot.size() == (8, 6)
    assert shot._raw is None  # the header check reads no pixel data into the model
    f.unlink()
    with pytest.raises(ScreenshotError, match="missing") as err:
        shot.bytes()
    assert err.value.file == str(f)


def test_decompression_bomb_is_refused_before_decoding(tmp_path):
    bomb = huge_png_header(60_000, 60_000)
    assert len(bomb) < 200
    shot = Screenshot.from_bytes(bomb, step=1)
    with pytest.raises(ScreenshotError, match="pixel"):
        shot.size()
    with pytest.raises(ScreenshotError):
        shot.image()
    f = tmp_path / "bomb.png"
    f.write_bytes(bomb)
    with pytest.raises(ScreenshotError) as err:
        Screenshot.from_path(f, step=1).image()
    assert err.value.file == str(f)


def test_pixel_and_byte_limits(tmp_path):
    data = png(size=(20, 20))
    with pytest.raises(ScreenshotError, match="400-pixel|over the 100-pixel"):
        Screenshot.from_bytes(data, step=1).image(max_pixels=100)
    with pytest.raises(ScreenshotError, match="over the 100-pixel"):
        Screenshot.from_image(Image.new("RGB", (20, 20)), step=1).image(max_pixels=100)
    f = tmp_path / "s.png"
    f.write_bytes(data)
    with pytest.raises(ScreenshotError, match="byte limit"):
        Screenshot.from_path(f, step=1).bytes(max_bytes=10)
    with pytest.raises(ScreenshotError, match="byte limit"):
        Screenshot.from_data_url(data_url(data), step=1).bytes(max_bytes=10)


def test_corrupt_and_invalid_sources():
    with pytest.raises(ScreenshotError, match="decode|readable"):
        Screenshot.from_bytes(b"this is not an image", step=1).image()
    truncated = Screenshot.from_bytes(png(size=(64, 64))[:-30], step=1)
    assert truncated.size() == (64, 64)  # the header is intact ...
    with pytest.raises(ScreenshotError, match="decode"):
        truncated.image()  # ... the pixels are not
    with pytest.raises(ScreenshotError, match="base64"):
        Screenshot.from_data_url("data:image/png;base64,@@@", step=1).bytes()
    with pytest.raises(ScreenshotError, match="data URL"):
        Screenshot.from_data_url("https://example.com/a.png", step=1).bytes()
    with pytest.raises(ScreenshotError, match="no source"):
        Screenshot(step=1).bytes()
    with pytest.raises(ValidationError, match="not both"):
        Screenshot(step=1, path="a.png", data_url=data_url(png()))


def test_steps_must_be_numbered_consecutively_from_one():
    task = Task(id="t", instruction="x")
    Trajectory(task=task, steps=[Step(index=1, action="a"), Step(index=2, action="b")])
    with pytest.raises(ValidationError, match=r"steps\[1\].index is 3, expected 2"):
        Trajectory(task=task, steps=[Step(index=1, action="a"), Step(index=3, action="b")])
    with pytest.raises(ValidationError, match="expected 1"):
        Trajectory(task=task, steps=[Step(index=2, action="a")])
    with pytest.raises(ValidationError):
        Step(index=0, action="a")
    with pytest.raises(ValidationError):
        Step(index=1, action="")


def test_no_answer_is_explicit_and_distinct_from_empty():
    none = make_traj([], final_answer=None, status=RunStatus.step_budget_exhausted)
    empty = make_traj([], final_answer="")
    assert not none.answered and empty.answered
    assert Trajectory.model_validate_json(none.to_json()).final_answer is None
    assert Trajectory.model_validate_json(empty.to_json()).final_answer == ""
    assert Trajectory.model_validate_json(none.to_json()).status is RunStatus.step_budget_exhausted


def test_extra_fields_rejected():
    with pytest.raises(ValidationError):
        Step(index=1, action="a", reasoning="hidden in the wrong place")
