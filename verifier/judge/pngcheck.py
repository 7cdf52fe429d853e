"""Is a PNG whole? Its chunks (CRC walk) and its pixel stream (inflated, never decoded).

A screenshot passed to the judge as its own bytes is never decoded here (decoding is most of the
client's CPU), so these checks stand in for a decode:

- `png_chunks_sound`: every chunk from the first IDAT to IEND is whole and has its stated CRC
  (PIL's ``verify`` walk, without its per-chunk copies);
- `png_pixels_problem`: the IDAT stream inflates (zlib, in bounded pieces whose output is
  discarded, so no pixel buffer is held) to exactly the byte count the header implies, and every
  row of a non-interlaced image starts with a valid filter type.

The second exists because CRCs only prove the bytes are the ones the writer meant. An IDAT whose
bytes were XOR-ed, or cut short, with CRCs recomputed, passes the walk; the judge's server then
fails to decode it (a 400 that blames the judge) or, in a stage that can degrade, the verdict
rests on a screenshot the judge never saw. Inflating costs a few milliseconds on a full-HD
screenshot, a fraction of a decode.
"""
from __future__ import annotations

import struct

try:  # optional (the service extra): ISA-L's CRC-32 and inflate, several times zlib's
    from isal.isal_zlib import crc32, decompressobj
except ImportError:  # pragma: no cover - exercised only without the extra
    from zlib import crc32, decompressobj  # type: ignore[assignment]

_U32 = struct.Struct(">I").unpack_from
_CHUNK_HEAD = struct.Struct(">I4s").unpack_from  # a chunk's length and name
_IHDR = struct.Struct(">IIBBBBB").unpack_from  # width, height, bit depth, colour type, compr., filter, interlace
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # colour type -> samples per pixel
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))
#: Inflated bytes produced per step: bounds the memory of the check whatever the image's size.
PIECE = 1 << 20


def png_chunks_sound(data: bytes, start: int) -> bool:
    """True when every chunk from offset `start` (PIL's: the first IDAT) to IEND is whole and has
    its stated CRC: the walk of PIL's ``verify`` (a chunk type of 4 letters or digits, a subset of
    what PIL accepts; IEND ends the walk), without its per-chunk reads and copies (~3x faster on a
    screenshot of 350 IDAT chunks). It only says True where PIL's walk passes; on False, the caller
    asks PIL, so the verdict and its reason stay PIL's."""
    view, end, pos = memoryview(data), len(data), start
    while pos + 8 <= end:
        length, kind = _CHUNK_HEAD(data, pos)
        stop = pos + 8 + length
        if kind != b"IDAT":  # nearly every chunk is one: its name needs no further check
            if kind == b"IEND":
                return True
            if not kind.isalnum():
                return False
        if stop + 4 > end or crc32(view[pos + 4:stop]) != _U32(data, stop)[0]:
            return False
        pos = stop + 4
    return False


def _row_bytes(width: int, bits: int) -> int:
    return 1 + (width * bits + 7) // 8  # the filter byte, then the packed samples


def expected_stream_size(width: int, height: int, bits: int, interlaced: bool) -> int:
    """Bytes of the inflated IDAT stream for an image of this header (PNG spec, section 7-8)."""
    if not interlaced:
        return height * _row_bytes(width, bits)
    total = 0
    for x0, y0, dx, dy in _ADAM7:
        pw, ph = (width - x0 + dx - 1) // dx, (height - y0 + dy - 1) // dy
        if pw > 0 and ph > 0:
            total += ph * _row_bytes(pw, bits)
    return total


def png_pixels_problem(data: bytes) -> str | None:
    """Why the pixel stream of PNG `data` cannot be decoded, or None when it can.

    Called only on a file whose chunks passed the CRC walk; the header is trusted as far as PIL
    already parsed it (signature and IHDR)."""
    if len(data) < 33 or data[12:16] != b"IHDR":
        return "no IHDR chunk where the PNG signature requires one"
    width, height, depth, colour, _, _, interlace = _IHDR(data, 16)
    if colour not in _CHANNELS:
        return f"unknown PNG colour type {colour}"
    bits = _CHANNELS[colour] * depth
    want = expected_stream_size(width, height, bits, interlace == 1)
    stride = _row_bytes(width, bits)
    inflater, got, pos, end = decompressobj(), 0, 8, len(data)
    try:
        while pos + 8 <= end:
            length, kind = _CHUNK_HEAD(data, pos)
            if kind == b"IEND":
                break
            if kind == b"IDAT":
                pending = memoryview(data)[pos + 8:pos + 8 + length]
                while pending:
                    out = inflater.decompress(pending, PIECE)
                    if not interlace and out and max(out[(-got) % stride::stride], default=0) > 4:
                        return "corrupt pixel data: a row has an invalid PNG filter type"
                    got += len(out)
                    if got > want:
                        return f"pixel data longer than the {width}x{height} header allows"
                    pending = memoryview(inflater.unconsumed_tail)
                    if inflater.eof:
                        break
            pos += 12 + length
    except Exception as exc:  # noqa: BLE001 - zlib.error, isal's IsalError: the stream is damaged
        return f"corrupt pixel data (the compressed stream does not inflate: {exc})"
    if not inflater.eof or got != want:
        return (f"pixel data cut short: {got} of the {want} bytes a {width}x{height} image needs"
                if got < want else "pixel data does not end where the header says it should")
    return None
