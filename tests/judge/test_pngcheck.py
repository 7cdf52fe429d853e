"""A PNG whose chunk CRCs are valid but whose pixel stream is damaged is refused before it reaches
the judge (issue 38 §6): as an input error naming the screenshot, never a degraded stage or a
verdict on a screenshot the judge never saw, and never a "judge request rejected" that blames the
judge."""
from __future__ import annotations

import io
import json
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from verifier.judge import images, pngcheck


def png(mode: str = "RGB", size: tuple[int, int] = (120, 80), **save) -> bytes:
    img = Image.new(mode, size)
    img.putdata([(i * 37) % (2 if mode == "1" else 251) for i in range(size[0] * size[1])]
                if mode in ("1", "L", "P", "I;16") else
                [tuple((i * k) % 251 for k in range(1, len(mode) + 1)) for i in range(size[0] * size[1])])
    buf = io.BytesIO()
    img.save(buf, format="PNG", **save)
    return buf.getvalue()


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def split(data: bytes) -> list[tuple[bytes, bytes]]:
    out, pos = [], 8
    while pos < len(data):
        (n,) = struct.unpack_from(">I", data, pos)
        out.append((data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]))
        pos += 12 + n
    return out


def rebuild(data: bytes, idat: bytes) -> bytes:
    """`data` with its IDAT chunks replaced by one IDAT holding `idat`, every CRC valid."""
    parts = split(data)
    head = [chunk(k, b) for k, b in parts if k not in (b"IDAT", b"IEND")]
    return data[:8] + b"".join(head) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def stream(data: bytes) -> bytes:
    return b"".join(b for k, b in split(data) if k == b"IDAT")


def pil_decodes(data: bytes) -> bool:
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
    except Exception:  # noqa: BLE001 - any failure means PIL cannot decode it
        return False
    return True


def damaged() -> dict[str, bytes]:
    good = png()
    raw = zlib.decompress(stream(good))
    stride = 1 + 120 * 3
    bad_filter = bytearray(raw)
    bad_filter[stride * 40] = 9
    return {
        "xor": rebuild(good, bytes(b ^ 0x5A for b in stream(good))),
        "short": rebuild(good, zlib.compress(raw[: len(raw) // 2])),
        "cut": rebuild(good, stream(good)[: len(stream(good)) // 2]),
        "filter": rebuild(good, zlib.compress(bytes(bad_filter))),
        "long": rebuild(good, zlib.compress(raw + raw[:stride])),
    }


@pytest.mark.parametrize("kind", sorted(damaged()))
def test_a_crc_valid_png_with_broken_pixels_is_refused_with_its_reason(kind):
    bad = damaged()[kind]
    start = Image.open(io.BytesIO(bad)).tile[0][2] - 8
    assert pngcheck.png_chunks_sound(bad, start)  # the chunk walk alone passes it: why this check exists
    reason = images.verify_image_bytes(bad)
    assert reason is not None and "pixel data" in reason, reason
    # PIL is lenient at the stream's ends: it stops at the image's last row ("long") and fills rows
    # missing after a complete stream with zeros ("short"; libpng refuses it: not enough image data)
    assert pil_decodes(bad) == (kind in ("long", "short"))


@pytest.mark.parametrize("mode,save", [("1", {}), ("L", {}), ("LA", {}), ("P", {}), ("RGB", {}), ("RGBA", {}),
                                       ("I;16", {}), ("RGB", {"compress_level": 0}), ("RGB", {"optimize": True})])
def test_whole_pngs_of_every_colour_type_and_depth_pass(mode, save):
    good = png(mode, (97, 61), **save)  # odd sizes: rows that end mid-byte for 1-bit images
    assert pil_decodes(good) and images.verify_image_bytes(good) is None


def adam7(width: int, height: int) -> bytes:
    """An interlaced 8-bit RGB PNG written by hand (PIL writes none): the seven Adam7 passes."""
    rows = []
    for x0, y0, dx, dy in pngcheck._ADAM7:
        for y in range(y0, height, dy):
            xs = range(x0, width, dx)
            if xs:
                rows.append(b"\x00" + bytes(v for x in xs for v in ((x * 3) % 256, (y * 5) % 256, 7)))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 1)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(
        b"IEND", b"")


def test_an_interlaced_png_is_measured_by_its_seven_passes():
    good = adam7(29, 13)
    assert pil_decodes(good) and images.verify_image_bytes(good) is None
    raw = zlib.decompress(stream(good))
    assert len(raw) == pngcheck.expected_stream_size(29, 13, 24, True) != pngcheck.expected_stream_size(29, 13, 24, False)
    short = rebuild(good, zlib.compress(raw[:-5]))
    assert not pil_decodes(short)
    assert "cut short" in (images.verify_image_bytes(short) or "")


def test_the_check_holds_no_pixel_buffer(monkeypatch):
    """Inflated output comes in pieces of at most `PIECE` bytes, whatever the image's size."""
    seen: list[int] = []
    real = pngcheck.decompressobj

    class Spy:
        def __init__(self):
            self.inner = real()

        def decompress(self, data, max_length=0):
            out = self.inner.decompress(data, max_length)
            seen.append(len(out))
            return out

        def __getattr__(self, name):
            return getattr(self.inner, name)

    monkeypatch.setattr(pngcheck, "decompressobj", Spy)
    big = png("RGB", (1200, 900), compress_level=1)
    assert pngcheck.png_pixels_problem(big) is None
    assert max(seen) <= pngcheck.PIECE < 1200 * 900 * 3 and sum(seen) == 900 * (1 + 1200 * 3)


def write_run(root: Path, broken_at: int) -> Path:
    from verifier.trajectory import Screenshot, Step, Task, Trajectory

    root.mkdir()
    for i, colour in enumerate(("white", "red", "blue")):
        buf = io.BytesIO()
        Image.new("RGB", (64, 40), colour).save(buf, format="PNG")
        data = buf.getvalue()
        (root / f"s{i}.png").write_bytes(rebuild(data, bytes(b ^ 0x5A for b in stream(data))) if i == broken_at
                                         else data)
    traj = Trajectory(task=Task(id="t", instruction="Find the price of the red kettle"),
                      steps=[Step(index=1, action="click", arguments={"x": 1}),
                             Step(index=2, action="click", arguments={"x": 2})],
                      screenshots=[Screenshot.from_path(f"s{i}.png", step=min(i + 1, 2),
                                                        timing="before" if i < 2 else "after") for i in range(3)],
                      final_answer="The price is $5")
    (root / "trajectory.json").write_text(traj.to_json())
    return root / "trajectory.json"


@pytest.mark.parametrize("broken_at", [1, 2], ids=["middle", "final"])
def test_score_records_an_input_error_naming_the_screenshot(tmp_path, broken_at):
    from cua_verifier.cli import main
    from reward.echo_judge import EchoJudgeServer

    path = write_run(tmp_path / "run", broken_at)
    with EchoJudgeServer() as server:
        code = main(["score", str(path), "--out", str(tmp_path / "o.jsonl"), "--no-progress",
                     "--judge-url", server.url, "--model", "judge"])
    record = json.loads((tmp_path / "o.jsonl").read_text())
    assert code != 0 and record["status"] == "unscored" and record["result"] is None
    assert record["reason"].startswith("ScreenshotError") and f"s{broken_at}.png" in record["reason"]
    assert "pixel data" in record["reason"] and "judge" not in record["reason"]
