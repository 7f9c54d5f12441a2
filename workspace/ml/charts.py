"""Small server-rendered SVG charts from plain numbers (no Django, no JavaScript, no CDN).

Every builder returns an ``<svg>`` string (text escaped here) sized by ``viewBox`` so it
scales with the page, with a ``<title>`` for screen readers. The numbers behind a chart are
shown beside it by the template (a ``<details>`` table), never only in the picture.

Builders: :func:`bars` (horizontal bars, e.g. a funnel), :func:`heatmap` (rows x columns with
a value and a count per cell), :func:`reliability` (accuracy against confidence, per bin),
:func:`histogram` (counts per bin with an optional vertical marker), :func:`lines` (one or
more series over x in [0, 1]), :func:`intervals` (point estimates with confidence intervals),
:func:`stacked` (shares stacked to 100% per row).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

PALETTE = ("#3566a8", "#d9822b", "#3a9a5b", "#b4424b", "#7d5ba6", "#8c6d46", "#5f7d8c")
FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" class="chart-svg" role="img" aria-label="{escape(title)}" {FONT}>'
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
    )


def _fmt(v: float | None, digits: int = 2) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def bars(rows: Sequence[tuple[str, float]], *, title: str, width: int = 560, unit: str = "") -> str:
    """Horizontal bars, one per ``(label, value)``, the value written at the bar's end."""
    top = max((v for _, v in rows), default=0.0) or 1.0
    left, bar_h, gap = 130, 18, 6
    height = 10 + len(rows) * (bar_h + gap)
    span = width - left - 60
    body = []
    for i, (label, v) in enumerate(rows):
        y = 5 + i * (bar_h + gap)
        w = max(0.0, v) / top * span
        body.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{escape(label)}</text>')
        body.append(
            f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{PALETTE[0]}"><title>'
            f"{escape(label)}: {v:g}{unit}</title></rect>"
        )
        body.append(f'<text x="{left + w + 4:.1f}" y="{y + 13}">{v:g}{escape(unit)}</text>')
    return _svg(width, max(height, 30), title, body)


def _heat_colour(v: float) -> str:
    """White (0) to dark orange (1)."""
    v = min(1.0, max(0.0, v))
    r, g, b = 255 - int(38 * v), 255 - int(150 * v), 255 - int(215 * v)
    return f"rgb({r},{g},{b})"


def heatmap(
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    cells: Sequence[Sequence[tuple[float | None, int]]],
    *,
    title: str,
    cell_w: int = 0,
) -> str:
    """A grid: ``cells[r][c] = (value in [0, 1] or None, n)``; each cell shows the value and n
    (a grey cell with "–" where there is no data). ``cell_w`` 0: wide enough for the labels."""
    cell_w = cell_w or max(96, 7 * max((len(c) for c in col_labels), default=0) + 16)
    left, top, cell_h = 150, 34, 30
    width = left + cell_w * max(1, len(col_labels)) + 10
    height = top + cell_h * max(1, len(row_labels)) + 8
    body = []
    for c, label in enumerate(col_labels):
        body.append(
            f'<text x="{left + c * cell_w + cell_w / 2}" y="{top - 10}" text-anchor="middle">{escape(label)}</text>'
        )
    for r, label in enumerate(row_labels):
        y = top + r * cell_h
        body.append(f'<text x="{left - 6}" y="{y + 19}" text-anchor="end">{escape(label)}</text>')
        for c in range(len(col_labels)):
            value, n = cells[r][c]
            x = left + c * cell_w
            fill = "#eeeeee" if value is None else _heat_colour(value)
            text = "–" if value is None else f"{value:.2f} (n={n})"
            tip = f"{label} / {col_labels[c]}: " + ("no data" if value is None else f"{value:.3f}, n={n}")
            body.append(
                f'<rect x="{x}" y="{y}" width="{cell_w - 2}" height="{cell_h - 2}" fill="{fill}">'
                f"<title>{escape(tip)}</title></rect>"
            )
            body.append(f'<text x="{x + cell_w / 2 - 1}" y="{y + 18}" text-anchor="middle">{escape(text)}</text>')
    return _svg(width, height, title, body)


def _axes(x0: int, y0: int, w: int, h: int, xlabel: str, ylabel: str) -> list[str]:
    out = [
        f'<line x1="{x0}" y1="{y0}" x2="{x0 + w}" y2="{y0}" stroke="#444"/>',
        f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 - h}" stroke="#444"/>',
        f'<text x="{x0 + w / 2}" y="{y0 + 30}" text-anchor="middle">{escape(xlabel)}</text>',
        f'<text x="12" y="{y0 - h / 2}" text-anchor="middle" transform="rotate(-90 12 {y0 - h / 2})">'
        f"{escape(ylabel)}</text>",
    ]
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<text x="{x0 + t * w}" y="{y0 + 14}" text-anchor="middle">{t:g}</text>')
        out.append(f'<text x="{x0 - 4}" y="{y0 - t * h + 4}" text-anchor="end">{t:g}</text>')
    return out


def reliability(bins: Sequence[tuple[float, float, float | None, int]], *, title: str, size: int = 260) -> str:
    """Reliability diagram: per bin ``(lo, hi, accuracy or None, n)`` a bar up to the bin's
    accuracy, and the diagonal of perfect calibration."""
    x0, y0 = 44, size - 10
    w = h = size - 60
    body = _axes(x0, y0, w, h, "confidence", "accuracy")
    body.append(f'<line x1="{x0}" y1="{y0}" x2="{x0 + w}" y2="{y0 - h}" stroke="#999" stroke-dasharray="4 3"/>')
    for lo, hi, acc, n in bins:
        if acc is None or n == 0:
            continue
        bx, bw, bh = x0 + lo * w, (hi - lo) * w, acc * h
        body.append(
            f'<rect x="{bx:.1f}" y="{y0 - bh:.1f}" width="{max(bw - 1, 1):.1f}" height="{bh:.1f}" '
            f'fill="{PALETTE[0]}" fill-opacity="0.75"><title>{lo:.1f}–{hi:.1f}: accuracy {acc:.3f}, n={n}'
            "</title></rect>"
        )
    return _svg(size, size + 24, title, body)


def histogram(
    bins: Sequence[tuple[float, float, int]], *, title: str, marker: float | None = None, marker_label: str = ""
) -> str:
    """Counts per bin ``(lo, hi, n)`` over [0, 1]; an optional vertical line at ``marker``."""
    size = 260
    x0, y0 = 44, size - 10
    w = h = size - 60
    top = max((n for _, _, n in bins), default=0) or 1
    body = [
        f'<line x1="{x0}" y1="{y0}" x2="{x0 + w}" y2="{y0}" stroke="#444"/>',
        f'<text x="{x0 + w / 2}" y="{y0 + 30}" text-anchor="middle">confidence</text>',
        f'<text x="{x0 - 4}" y="{y0 - h + 4}" text-anchor="end">{top}</text>',
        f'<text x="{x0 - 4}" y="{y0 + 4}" text-anchor="end">0</text>',
    ]
    for t in (0.0, 0.5, 1.0):
        body.append(f'<text x="{x0 + t * w}" y="{y0 + 14}" text-anchor="middle">{t:g}</text>')
    for lo, hi, n in bins:
        bh = n / top * h
        body.append(
            f'<rect x="{x0 + lo * w:.1f}" y="{y0 - bh:.1f}" width="{max((hi - lo) * w - 1, 1):.1f}" '
            f'height="{bh:.1f}" fill="{PALETTE[1]}"><title>{lo:.1f}–{hi:.1f}: {n}</title></rect>'
        )
    if marker is not None:
        mx = x0 + marker * w
        body.append(f'<line x1="{mx:.1f}" y1="{y0}" x2="{mx:.1f}" y2="{y0 - h}" stroke="#b4424b" stroke-width="2"/>')
        body.append(f'<text x="{mx + 3:.1f}" y="{y0 - h + 10}" fill="#b4424b">{escape(marker_label)}</text>')
    return _svg(size, size + 24, title, body)


def lines(
    series: Sequence[tuple[str, Sequence[tuple[float, float | None]]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    marker: float | None = None,
) -> str:
    """One polyline per ``(name, [(x, y), ...])`` with x and y in [0, 1] (None: a gap)."""
    size = 300
    x0, y0 = 44, size - 30
    w, h = size - 60, size - 80
    body = _axes(x0, y0, w, h, xlabel, ylabel)
    for i, (name, pts) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        seg = [f"{x0 + x * w:.1f},{y0 - y * h:.1f}" for x, y in pts if y is not None]
        if seg:
            body.append(f'<polyline points="{" ".join(seg)}" fill="none" stroke="{colour}" stroke-width="2"/>')
        body.append(f'<rect x="{x0 + 8}" y="{10 + i * 14}" width="10" height="10" fill="{colour}"/>')
        body.append(f'<text x="{x0 + 22}" y="{19 + i * 14}">{escape(name)}</text>')
    if marker is not None:
        mx = x0 + marker * w
        body.append(
            f'<line x1="{mx:.1f}" y1="{y0}" x2="{mx:.1f}" y2="{y0 - h}" stroke="#b4424b" stroke-dasharray="3 3"/>'
        )
    return _svg(size, size + 4, title, body)


def intervals(
    rows: Sequence[tuple[str, float | None, float | None, float | None, str]],
    *,
    title: str,
    lo: float = 0.0,
    hi: float = 1.0,
    width: int = 560,
) -> str:
    """One row per ``(label, estimate, ci_low, ci_high, note)`` on an axis from ``lo`` to
    ``hi``: a dot and a whisker; a row with no estimate shows its note (e.g. "n/a (…)")."""
    left, right, row_h = 150, 170, 22
    span = width - left - right
    height = 30 + len(rows) * row_h

    def px(v: float) -> float:
        return left + (min(hi, max(lo, v)) - lo) / (hi - lo) * span

    body = [f'<line x1="{left}" y1="{height - 18}" x2="{left + span}" y2="{height - 18}" stroke="#444"/>']
    for t in (lo, (lo + hi) / 2, hi):
        body.append(f'<text x="{px(t):.1f}" y="{height - 4}" text-anchor="middle">{t:g}</text>')
    if lo < 0 < hi:
        body.append(f'<line x1="{px(0):.1f}" y1="4" x2="{px(0):.1f}" y2="{height - 18}" stroke="#bbb"/>')
    for i, (label, est, cl, ch, note) in enumerate(rows):
        y = 14 + i * row_h
        body.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{escape(label)}</text>')
        if est is None:
            body.append(f'<text x="{left + 4}" y="{y + 4}" fill="#777">{escape(note or "n/a")}</text>')
            continue
        if cl is not None and ch is not None:
            body.append(f'<line x1="{px(cl):.1f}" y1="{y}" x2="{px(ch):.1f}" y2="{y}" stroke="{PALETTE[0]}"/>')
        body.append(
            f'<circle cx="{px(est):.1f}" cy="{y}" r="4" fill="{PALETTE[0]}"><title>{escape(label)}: '
            f"{est:.3f} [{_fmt(cl, 3)}, {_fmt(ch, 3)}]</title></circle>"
        )
        text = f"{est:.2f} [{_fmt(cl)}, {_fmt(ch)}] {note}".strip()
        body.append(f'<text x="{left + span + 8}" y="{y + 4}">{escape(text)}</text>')
    return _svg(width, height, title, body)


def stacked(rows: Sequence[tuple[str, Sequence[int]]], parts: Sequence[str], *, title: str, width: int = 560) -> str:
    """One 100%-bar per ``(label, counts per part)``, with a legend for ``parts``."""
    left, bar_h, gap = 150, 18, 6
    span = width - left - 50
    height = 26 + len(rows) * (bar_h + gap)
    body = []
    for j, part in enumerate(parts):
        body.append(f'<rect x="{left + j * 95}" y="2" width="10" height="10" fill="{PALETTE[j % len(PALETTE)]}"/>')
        body.append(f'<text x="{left + j * 95 + 14}" y="11">{escape(part)}</text>')
    for i, (label, counts) in enumerate(rows):
        y = 22 + i * (bar_h + gap)
        total = sum(counts)
        body.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{escape(label)}</text>')
        x = float(left)
        for j, n in enumerate(counts):
            if not total or not n:
                continue
            w = n / total * span
            body.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{PALETTE[j % len(PALETTE)]}">'
                f"<title>{escape(label)} – {escape(parts[j])}: {n} of {total}</title></rect>"
            )
            x += w
        body.append(f'<text x="{left + span + 4}" y="{y + 13}">n={total}</text>')
    return _svg(width, height, title, body)
