"""A request body as the chunks it arrived in, read as one byte string without joining it.

Why: the body parser only needs a few small windows of a body (the heads and ends of its data
URLs, the JSON around them) plus each data URL's text once. Joining a 41 MB body first copied every
byte of it, cold, into a fresh buffer (5-8% of the service's CPU at M = 50), and the parser then
read the screenshots from that buffer cold again. Over the chunks, a data URL inside one chunk is
read where it lies, and one that spans chunks is joined alone, into a buffer that is still in the
CPU's cache when it is decoded and turned into text right after.

`Chunks` offers what `body.lift_data_urls` uses of `bytes`: `find`, `slice` (a memoryview when the
range lies in one chunk, joined bytes otherwise), `byte_at` and `whole` (the join, for the rare
body that has to be parsed as a whole).
"""
from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate


class Chunks:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = [c for c in chunks if c]
        self.starts = [0, *accumulate(len(c) for c in self.chunks)]
        self.size = self.starts[-1]

    def _index(self, pos: int) -> int:
        """The chunk holding byte `pos` (0 <= pos < size)."""
        return bisect_right(self.starts, pos) - 1

    def byte_at(self, pos: int) -> int:
        i = self._index(pos)
        return self.chunks[i][pos - self.starts[i]]

    def slice(self, a: int, b: int) -> bytes | memoryview:
        """Bytes ``a:b`` (clipped to the body): a view into one chunk, or the parts joined."""
        a, b = max(a, 0), min(b, self.size)
        if a >= b:
            return b""
        i = self._index(a)
        base = self.starts[i]
        if b <= self.starts[i + 1]:
            return memoryview(self.chunks[i])[a - base:b - base]
        parts: list[bytes | memoryview] = [memoryview(self.chunks[i])[a - base:]]
        i += 1
        while self.starts[i + 1] < b:
            parts.append(self.chunks[i])
            i += 1
        parts.append(memoryview(self.chunks[i])[:b - self.starts[i]])
        return b"".join(parts)

    def find(self, sub: bytes, start: int = 0) -> int:
        """Lowest index >= `start` where `sub` begins, or -1; matches across chunk ends included."""
        if start >= self.size:
            return -1
        k, i = len(sub), self._index(max(start, 0))
        while i < len(self.chunks):
            chunk, base = self.chunks[i], self.starts[i]
            local = max(start - base, 0)
            j = chunk.find(sub, local)
            if j >= 0:
                return base + j
            # a match that begins in this chunk and ends in a later one
            tail = max(len(chunk) - (k - 1), local)
            if tail < len(chunk) and self.starts[i + 1] < self.size:
                window = bytes(self.slice(base + tail, self.starts[i + 1] + k - 1))
                j = window.find(sub)
                if 0 <= j < len(chunk) - tail:
                    return base + tail + j
            i += 1
        return -1

    def whole(self) -> bytes:
        return self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks)  # none: b""
