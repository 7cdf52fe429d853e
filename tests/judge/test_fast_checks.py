"""The fast paths of screenshot admission give the verdicts of the slow ones (issue 21 §3):
base64 through pybase64, the PNG CRC walk, and repeated data URLs adopted instead of decoded."""
from __future__ import annotations

import base64
import binascii
import io
import os
import re
import struct
import zlib

import pytest
from PIL import Image

from verifier.errors import ScreenshotError
from verifier.judge import images
from verifier.loaders._common import check_screenshots
from verifier.trajectory import Screenshot


def noisy_png(w: int = 300, h: int = 200, seed: int = 0) -> bytes:
    """A PNG of several IDAT chunks (stored, not compressed), as real captures have hundreds."""
    buf = io.BytesIO()
    Image.frombytes("RGB", (w, h), bytes((x * 7 + seed) % 251 for x in range(w * h * 3))).save(
        buf, format="PNG", compress_level=0)
    return buf.getvalue()


def chunks(png: bytes) -> list[tuple[int, bytes, int]]:
    """(offset, type, length) of every chunk."""
    out, pos = [], 8
    while pos + 8 <= len(png):
        (n,) = struct.unpack_from(">I", png, pos)
        out.append((pos, png[pos + 4:pos + 8], n))
        pos += 12 + n
    return out


def pil_verdict(data: bytes) -> str | None:
    """PIL's own verify, worded as `images._check` words it: the reference the fast walk must match."""
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.verify()
    except Exception as exc:  # noqa: BLE001 - whatever PIL raises is its verdict
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return None


def unaddressed(reason: str | None) -> str | None:
    return re.sub(r"0x[0-9a-fA-F]+", "0x...", reason) if reason else reason


def mutations(good: bytes) -> dict[str, bytes]:
    """Damage of every kind at every chunk: a bit of data, of the CRC, of the length, of the type;
    cuts inside and between chunks; the end marker gone; bytes after the end marker."""
    out: dict[str, bytes] = {}
    for k, (pos, kind, n) in enumerate(chunks(good)):
        for what, at in (("data", pos + 8 + n // 2), ("crc", pos + 8 + n), ("length", pos + 3),
                         ("type", pos + 5)):
            if at < len(good) and (n or what != "data"):
                bad = bytearray(good)
                bad[at] ^= 0x04
                out[f"{k}:{kind.decode()}:{what}"] = bytes(bad)
        out[f"{k}:cut-in"] = good[:pos + 8 + n // 2]
        out[f"{k}:cut-before"] = good[:pos]
    iend = good.rindex(b"IEND") - 4
    out["no-iend"] = good[:iend]
    out["renamed-iend"] = good[:iend + 4] + b"IENX" + good[iend + 8:]
    out["trailing-bytes"] = good + b"\x00garbage"
    return out


def test_the_crc_walk_passes_whole_pngs_and_gives_pils_verdict_on_every_damage():
    good = noisy_png()
    assert sum(kind == b"IDAT" for _, kind, _ in chunks(good)) > 2
    assert images._check(good) is None
    start = Image.open(io.BytesIO(good)).tile[0][2] - 8
    assert images.png_chunks_sound(good, start)
    damaged = mutations(good)
    refused = 0
    for name, bad in damaged.items():
        # PIL's reasons can embed an object's address (<... at 0x7f...>), different on each call
        assert unaddressed(images._check(bad)) == unaddressed(pil_verdict(bad)), name
        refused += pil_verdict(bad) is not None
    assert refused > len(damaged) // 2  # the damage is real: most of it PIL refuses


def test_a_whole_png_is_not_walked_by_pil_and_a_broken_one_is(monkeypatch):
    """The fast walk really stands in for PIL's verify on sound files (where the time went)."""
    from PIL import PngImagePlugin

    calls: list[int] = []
    real = PngImagePlugin.PngImageFile.verify
    monkeypatch.setattr(PngImagePlugin.PngImageFile, "verify", lambda self: calls.append(1) or real(self))
    good = noisy_png(seed=3)
    assert images._check(good) is None and calls == []
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0x10
    assert images._check(bytes(bad)) is not None and calls == [1]


def test_the_crc_walk_uses_the_standard_polynomial():
    """Whichever CRC-32 is installed (ISA-L's or zlib's), it is the one PNG uses."""
    data = os.urandom(10_000)
    assert images.crc32(data) == zlib.crc32(data) and images.crc32(memoryview(data)[5:77]) == zlib.crc32(data[5:77])


BASE64_CASES = ["", "QQ==", "QQ=", "QQ", "QUJD", "QUJD=", "QUJD====", "QQ==QQ==", "Q Q==", "QQ==\n", "QUJD\r\n",
                '"', "\\", "-_", "==", "=QQ=", "QUJ\x00", "QUJé", 'QU"D', "QUJ=D", "QQ===", "Q===",
                base64.b64encode(os.urandom(3000)).decode()]


@pytest.mark.parametrize("fast", [True, False])
def test_base64_accepts_and_refuses_exactly_what_the_standard_library_does(fast, monkeypatch):
    from verifier import trajectory

    if not fast:
        monkeypatch.setattr(trajectory, "_fast_b64", None)
    elif trajectory._fast_b64 is None:
        pytest.skip("pybase64 not installed (the service extra)")

    def outcome(fn, text):
        try:
            return fn(text)
        except (binascii.Error, ValueError):
            return "refused"

    for text in BASE64_CASES:
        assert outcome(trajectory.b64decode_checked, text) == outcome(
            lambda t: base64.b64decode(t, validate=True), text), repr(text[:20])


def test_a_repeated_data_url_adopts_the_first_ones_facts_and_a_lookalike_does_not():
    from verifier.perf.shots import tagged_png

    first, other = tagged_png(noisy_png(seed=1), "run a"), tagged_png(noisy_png(seed=1), "run b")
    assert len(first) == len(other) and first[-40:] == other[-40:]  # same length and tail: a lookalike
    urls = ["data:image/png;base64," + base64.b64encode(d).decode() for d in (first, first, other)]
    shots = [Screenshot.from_data_url(u, step=k) for k, u in enumerate(urls)]
    assert shots[0].data_url is not shots[1].data_url  # equal texts, two objects (as JSON parses them)
    check_screenshots(shots, file="t")
    assert shots[1].data_url is shots[0].data_url and shots[1]._raw is shots[0]._raw  # held once
    assert shots[1].known_sha256 == shots[0].sha256 and shots[1].size() == shots[0].size()
    assert shots[2]._raw is not shots[0]._raw and shots[2].sha256 != shots[0].sha256
    with pytest.raises(ValueError):
        shots[2].adopt(shots[0])


def test_a_broken_png_repeated_in_a_request_is_refused_at_each_place():
    """The service's parse: a repeated screenshot is not decoded again, and still not let through."""
    from serving.reward_service.core import parse_trajectory
    from verifier.trajectory import Step, Task, Trajectory

    good = noisy_png(seed=5)
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0x01
    url = "data:image/png;base64," + base64.b64encode(bytes(bad)).decode()
    record = Trajectory(task=Task(id="t", instruction="find it"),
                        steps=[Step(index=k, action="click") for k in (1, 2)]).model_dump(mode="json")
    record["screenshots"] = [{"step": 1, "data_url": url}, {"step": 2, "data_url": url}]
    traj = parse_trajectory(record, None, where="t")
    enc = images.ImageEncoder(max_side=None)
    for k, shot in enumerate(traj.screenshots, start=1):
        with pytest.raises(ScreenshotError, match=f"step {k} .*not a readable image: SyntaxError: broken PNG"):
            enc.encode(shot)
