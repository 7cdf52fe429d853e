"""The benchmark's arithmetic, pure and separately tested.

- Critical path: the logical ``usage.rounds`` says how many sequential rounds the DAG *needs*; what
  a run actually *took* is read from the judge's own request timestamps: the longest chain of
  requests each of which started after the previous one had finished. With a fixed judge latency L
  and no client overhead, wall time = waves x L = rounds x L; anything above min(waves, rounds) x L
  is client-side time (an extra wave is too: the DAG did not need it).
- Prefix-repeat share: the characters of each request's text (images as placeholders) that repeat
  the start of an earlier request, over all characters sent. It bounds what a prefix cache can reuse
  and is measured on the wire, so it holds for any server.
- vLLM's prefix-cache hit rate: ``prefix_cache_hits_total / prefix_cache_queries_total`` deltas
  read from ``/metrics`` (tokens).
"""
from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

#: A request starting less than this after another ended still overlaps it (timestamps come from
#: one clock, the judge's; a dependent request needs a client round trip, always more).
OVERLAP_EPS_S = 0.001


@dataclass(frozen=True)
class Request:
    """One chat completion as the judge saw it."""

    start: float  # request headers received: the judge's clock starts (monotonic seconds)
    end: float  # reply written
    text: str  # flattened messages (see `request_text`)
    payload_bytes: int  # characters of message content, image URLs included


#: How the loopback latency judge stands in for a base64 image it did not parse: the sha1 of the URL.
ELIDED_URL = "data:image/elided;sha1="


def image_placeholder(url: str, uuid: str | None = None) -> str:
    """A short stand-in for an image in request text: its uuid, else a hash of its URL (for an
    elided URL, the hash it names: the same placeholder as for the URL itself)."""
    if uuid:
        key = uuid
    elif url.startswith(ELIDED_URL):
        key = url[len(ELIDED_URL):][:16]
    else:
        key = hashlib.sha1(url.encode()).hexdigest()[:16]
    return f"<image:{key}>"


def request_text(body: dict[str, Any]) -> tuple[str, int]:
    """(the request's messages flattened to text, payload bytes) from a chat-completions body."""
    out: list[str] = []
    size = 0
    for msg in body.get("messages") or []:
        out.append(f"<|{msg.get('role')}|>")
        content = msg.get("content")
        parts: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for part in parts:
            if part.get("type") == "text":
                out.append(part.get("text") or "")
                size += len(part.get("text") or "")
            elif part.get("type") == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                out.append(image_placeholder(url, part.get("uuid")))
                size += len(url)
    return "\n".join(out), size


def critical_path(requests: Sequence[Request], eps: float = OVERLAP_EPS_S) -> int:
    """Length of the longest chain r1 -> r2 -> ... with each r(i+1) starting after r(i) ended.

    It is the number of sequential waves the run really took, whatever the DAG promised.
    """
    by_end = sorted(requests, key=lambda r: r.end)
    ends = [r.end for r in by_end]
    depth: list[int] = []  # depth of by_end[i]
    best_upto: list[int] = []  # max depth among by_end[:i+1]
    for r in by_end:
        k = bisect.bisect_right(ends, r.start - eps)  # requests that ended before r started
        d = 1 + (best_upto[k - 1] if k else 0)
        depth.append(d)
        best_upto.append(max(d, best_upto[-1] if best_upto else 0))
    return max(depth, default=0)


def _lcp(a: str, b: str) -> int:
    """Length of the common prefix (binary search over slice comparisons: C speed)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def prefix_repeats(texts: Iterable[str]) -> list[int]:
    """For each text in order, the longest prefix it shares with any *earlier* text.

    The longest common prefix with a set of strings is reached at a lexicographic neighbour, so a
    sorted list of the earlier texts is enough.
    """
    seen: list[str] = []
    out = []
    for text in texts:
        i = bisect.bisect_left(seen, text)
        best = max((_lcp(text, seen[j]) for j in (i - 1, i) if 0 <= j < len(seen)), default=0)
        out.append(best)
        seen.insert(i, text)
    return out


def prefix_repeat_share(texts: Sequence[str]) -> float:
    """Characters repeating an earlier request's prefix / all characters (0 for no text)."""
    total = sum(len(t) for t in texts)
    return sum(prefix_repeats(texts)) / total if total else 0.0


@dataclass(frozen=True)
class Figures:
    """What one benchmark run prints."""

    screenshots: int
    calls: int
    rounds: int  # logical rounds (usage.rounds)
    waves: int  # observed critical path
    wall_s: float
    latency_s: float  # the judge's fixed latency (0 for a real engine)
    payload_bytes: int
    prefix_share: float
    client_cpu_s: float = 0.0  # CPU time of the client process during the run (all threads)
    loop_lag_s: float = 0.0  # worst event-loop blocking seen by a 10 ms timer

    @property
    def ideal_s(self) -> float:
        return self.rounds * self.latency_s

    @property
    def judge_path_s(self) -> float:
        """Judge time the run could not avoid: the observed critical path, but never more waves
        than the DAG's logical rounds. A wave beyond them (a call sent only after another of its
        round had finished: a concurrency limit, a stalled event loop) is the client's doing."""
        waves = min(self.waves, self.rounds) if self.rounds else self.waves
        return waves * self.latency_s

    @property
    def overhead_s(self) -> float:
        """Client overhead: wall time not covered by unavoidable judge latency (`judge_path_s`).
        It includes building and sending the requests, the judge reading and parsing them before
        its clock starts, and handling the replies."""
        return max(0.0, self.wall_s - self.judge_path_s)

    @property
    def overhead_share(self) -> float:
        return self.overhead_s / self.wall_s if self.wall_s > 0 else 0.0


def summarise(*, screenshots: int, calls: int, rounds: int, wall_s: float, latency_s: float,
              requests: Sequence[Request], client_cpu_s: float = 0.0, loop_lag_s: float = 0.0) -> Figures:
    return Figures(screenshots=screenshots, calls=calls, rounds=rounds, waves=critical_path(requests),
                   wall_s=wall_s, latency_s=latency_s, payload_bytes=sum(r.payload_bytes for r in requests),
                   prefix_share=prefix_repeat_share([r.text for r in requests]), client_cpu_s=client_cpu_s,
                   loop_lag_s=loop_lag_s)


_METRIC = re.compile(r"^(vllm:prefix_cache_(?:hits|queries)_total)(?:\{[^}]*\})?\s+([0-9.eE+-]+)\s*$", re.MULTILINE)


def prefix_cache_counters(metrics_text: str) -> tuple[float, float]:
    """(hits, queries) summed over label sets, from a Prometheus ``/metrics`` page of vLLM."""
    hits = queries = 0.0
    for name, value in _METRIC.findall(metrics_text):
        if name.endswith("hits_total"):
            hits += float(value)
        else:
            queries += float(value)
    return hits, queries


def hit_rate(before: tuple[float, float], after: tuple[float, float]) -> float | None:
    """Prefix-cache hit rate between two counter readings (None when nothing was queried)."""
    queries = after[1] - before[1]
    return (after[0] - before[0]) / queries if queries > 0 else None


def table(rows: Sequence[Figures]) -> str:
    """The printed table (one row per M)."""
    head = (f"{'M':>4} {'calls':>5} {'rounds':>6} {'waves':>5} {'wall s':>7} {'ideal s':>7} "
            f"{'wall/ideal':>10} {'overhead':>8} {'cpu s':>6} {'lag ms':>6} {'MB sent':>8} {'prefix rep.':>11}")
    lines = [head]
    for f in rows:  # a real engine has no fixed latency: no ideal time, no overhead share
        ratio = f"x{f.wall_s / f.ideal_s:.2f}" if f.ideal_s else "-"
        ideal, overhead = (f"{f.ideal_s:.2f}", f"{f.overhead_share:.0%}") if f.latency_s else ("-", "-")
        lines.append(f"{f.screenshots:>4} {f.calls:>5} {f.rounds:>6} {f.waves:>5} {f.wall_s:>7.2f} "
                     f"{ideal:>7} {ratio:>10} {overhead:>8} {f.client_cpu_s:>6.2f} "
                     f"{f.loop_lag_s * 1000:>6.0f} "
                     f"{f.payload_bytes / 1e6:>8.1f} {f.prefix_share:>11.0%}")
    return "\n".join(lines)
