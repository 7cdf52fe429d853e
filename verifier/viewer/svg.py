"""Small inline SVG charts, drawn in Python so the site needs no plotting library and no network.

Every text that goes into the SVG is escaped here; the returned markup is trusted by the templates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from markupsafe import Markup

W, H = 270, 160
PAD_L, PAD_R, PAD_T, PAD_B = 36, 10, 22, 32
ACCENT = "#3867d6"


def _frame(title: str, body: list[str], width: int = W, height: int = H) -> Markup:
    head = (
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">'
        f'<text x="{width / 2}" y="14" text-anchor="middle" class="ct">{escape(title)}</text>'
    )
    return Markup(head + "".join(body) + "</svg>")


def _fmt(v: float) -> str:
    if abs(v) >= 10_000:
        return f"{v / 1000:.0f}k"
    if abs(v) >= 1000:
        return f"{v / 1000:.1f}k"
    return f"{v:g}" if v == int(v) else f"{v:.2f}".rstrip("0")


def histogram(
    values: Sequence[float],
    title: str,
    *,
    bins: int = 10,
    lo: float | None = None,
    hi: float | None = None,
    xlabel: str = "",
) -> Markup:
    """Counts of `values` in `bins` equal bins over [lo, hi] (data range by default)."""
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not vals:
        return _frame(
            title, [f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" class="cm">no data</text>']
        )
    lo = min(vals) if lo is None else lo
    hi = max(vals) if hi is None else hi
    if hi <= lo:
        hi = lo + 1
    counts = [0] * bins
    for v in vals:
        counts[min(bins - 1, max(0, int((v - lo) / (hi - lo) * bins)))] += 1
    top = max(counts)
    pw, ph = W - PAD_L - PAD_R, H - PAD_T - PAD_B
    bw = pw / bins
    body = [
        f'<line x1="{PAD_L}" y1="{PAD_T + ph}" x2="{PAD_L + pw}" y2="{PAD_T + ph}" class="ax"/>',
        f'<text x="{PAD_L - 4}" y="{PAD_T + 8}" text-anchor="end" class="cm">{top}</text>',
        f'<text x="{PAD_L - 4}" y="{PAD_T + ph}" text-anchor="end" class="cm">0</text>',
    ]
    for i, c in enumerate(counts):
        bh = ph * c / top if top else 0
        x = PAD_L + i * bw
        a, b = lo + i * (hi - lo) / bins, lo + (i + 1) * (hi - lo) / bins
        body.append(
            f'<rect x="{x + 1:.1f}" y="{PAD_T + ph - bh:.1f}" width="{bw - 2:.1f}" height="{bh:.1f}" '
            f'fill="{ACCENT}"><title>{escape(_fmt(a))} to {escape(_fmt(b))}: {c}</title></rect>'
        )
    for frac in (0, 0.5, 1):
        x = PAD_L + frac * pw
        body.append(
            f'<text x="{x:.1f}" y="{PAD_T + ph + 12}" text-anchor="middle" class="cm">'
            f"{escape(_fmt(lo + frac * (hi - lo)))}</text>"
        )
    if xlabel:
        body.append(
            f'<text x="{PAD_L + pw / 2}" y="{H - 4}" text-anchor="middle" class="cm">{escape(xlabel)}</text>'
        )
    return _frame(title, body)


def bars(items: Sequence[tuple[str, float, str]], title: str, *, total: float | None = None) -> Markup:
    """Horizontal bars: (label, value, colour); values shown, scaled to `total` (or the largest)."""
    rows = len(items) or 1
    height = PAD_T + 8 + rows * 26
    top = total if total else max([v for _, v, _ in items] or [1]) or 1
    label_w, pw = 70, W - 70 - 64
    body = []
    for i, (label, value, colour) in enumerate(items):
        y = PAD_T + 4 + i * 26
        bw = pw * value / top if top else 0
        share = f" ({100 * value / total:.0f}%)" if total else ""
        body += [
            f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end" class="cm">{escape(label)}</text>',
            f'<rect x="{label_w}" y="{y}" width="{pw:.1f}" height="18" class="bg"/>',
            f'<rect x="{label_w}" y="{y}" width="{bw:.1f}" height="18" fill="{escape(colour)}"/>',
            f'<text x="{label_w + pw + 4}" y="{y + 14}" class="cm">{escape(_fmt(value))}{share}</text>',
        ]
    return _frame(title, body, height=height)


def ci_bar(value: float, lo: float, hi: float, *, vmin: float = -1.0, vmax: float = 1.0) -> Markup:
    """A tiny interval glyph for a table cell: the bootstrap interval as a bar, the estimate as a dot."""
    if any(math.isnan(x) for x in (value, lo, hi)):
        return Markup("")
    w, h = 90, 10

    def x(v: float) -> float:
        return 2 + (w - 4) * (min(vmax, max(vmin, v)) - vmin) / (vmax - vmin)

    return Markup(
        f'<svg class="ci" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}"><line x1="2" y1="5" x2="{w - 2}" y2="5" class="ax"/>'
        f'<rect x="{x(lo):.1f}" y="2" width="{max(1.0, x(hi) - x(lo)):.1f}" height="6" '
        f'fill="#a5b8ee"/><circle cx="{x(value):.1f}" cy="5" r="2.6" fill="{ACCENT}"/></svg>'
    )


PALETTE = ["#3867d6", "#e17a2d", "#2e9e5b", "#9b59b6", "#c93a3a", "#17a2b8"]


def scatter(
    series: dict[str, tuple[Sequence[float], Sequence[float]]],
    title: str,
    *,
    xlabel: str = "",
    ylabel: str = "",
    size: int = 300,
) -> Markup:
    """Points in [0, 1] x [0, 1], one colour per series, with the y = x diagonal and a legend."""
    pad, legend = 36, 16 * len(series)
    width, height = size + pad + 10, size + pad + 26 + legend
    x0, y0 = pad, 22

    def px(v: float) -> float:
        return x0 + size * min(1.0, max(0.0, v))

    def py(v: float) -> float:
        return y0 + size * (1 - min(1.0, max(0.0, v)))

    body = [
        f'<rect x="{x0}" y="{y0}" width="{size}" height="{size}" class="bg"/>',
        f'<line x1="{px(0)}" y1="{py(0)}" x2="{px(1)}" y2="{py(1)}" class="ax" stroke-dasharray="4 3"/>',
    ]
    for v in (0, 0.5, 1):
        body += [
            f'<text x="{px(v)}" y="{y0 + size + 12}" text-anchor="middle" class="cm">{v:g}</text>',
            f'<text x="{x0 - 4}" y="{py(v) + 3}" text-anchor="end" class="cm">{v:g}</text>',
        ]
    for i, (name, (xs, ys)) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        body += [
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}" fill-opacity="0.6"/>'
            for x, y in zip(xs, ys)
        ]
        ly = y0 + size + 30 + 16 * i
        body += [
            f'<circle cx="{x0 + 6}" cy="{ly - 4}" r="4" fill="{colour}"/>',
            f'<text x="{x0 + 16}" y="{ly}" class="cm">{escape(name)} (n={len(xs)})</text>',
        ]
    if xlabel:
        body.append(
            f'<text x="{x0 + size / 2}" y="{y0 + size + 24}" text-anchor="middle" class="cm">'
            f"{escape(xlabel)}</text>"
        )
    if ylabel:
        body.append(
            f'<text x="10" y="{y0 + size / 2}" transform="rotate(-90 10 {y0 + size / 2})" '
            f'text-anchor="middle" class="cm">{escape(ylabel)}</text>'
        )
    return _frame(title, body, width=width, height=height)


def lines(
    series: dict[str, Sequence[float]],
    title: str,
    *,
    xlabels: Sequence[str] = (),
    width: int = 420,
    height: int = 220,
) -> Markup:
    """Values in [0, 1] over a common x (iterations), one polyline per series, with a legend."""
    n = max((len(v) for v in series.values()), default=0)
    x0, y0, w, h = 36, 22, width - 46, height - 70 - 14 * len(series)

    def px(i: int) -> float:
        return x0 + (w * i / (n - 1) if n > 1 else w / 2)

    def py(v: float) -> float:
        return y0 + h * (1 - min(1.0, max(0.0, v)))

    body = [f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" class="bg"/>']
    body += [f'<text x="{x0 - 4}" y="{py(v) + 3}" text-anchor="end" class="cm">{v:g}</text>' for v in (0, 0.5, 1)]
    for i, label in enumerate(list(xlabels)[:n]):
        body.append(f'<text x="{px(i):.1f}" y="{y0 + h + 12}" text-anchor="middle" class="cm">{escape(label)}</text>')
    for k, (name, values) in enumerate(series.items()):
        colour = PALETTE[k % len(PALETTE)]
        pts = [(px(i), py(v)) for i, v in enumerate(values) if not math.isnan(v)]
        if len(pts) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        body += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in pts]
        ly = y0 + h + 30 + 14 * k
        body += [f'<circle cx="{x0 + 6}" cy="{ly - 4}" r="4" fill="{colour}"/>',
                 f'<text x="{x0 + 16}" y="{ly}" class="cm">{escape(name)}</text>']
    return _frame(title, body, width=width, height=height)
