"""Inline SVG charts for the report, drawn from numbers by code (no plotting library, no fonts read).

Two kinds: horizontal stacked bars (memory terms at the peak, one bar per configuration, with each
GPU type's memory as a vertical line) and line charts (per-GPU memory against sequence length or
batch size on a log-log grid, with each GPU type's memory as a horizontal line).

Print-safe: series differ in lightness and pattern, not hue alone; lines and totals carry direct
labels; every axis has a title with its unit. Output is deterministic text: the same numbers give
the same bytes. Every string placed in the SVG is escaped here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Sequence

# Series fills, dark to light (distinct lightness in greyscale); every other one patterned as well.
PALETTE = ("#2d1e5c", "#4b3b8f", "#2f6aa6", "#2a9190", "#49a86a", "#97c65a", "#b7cc50", "#d4d157", "#eba95b",
           "#f5d9b8", "#dedede")
PATTERNS = ("solid", "hatch", "solid", "dots", "solid", "hatch", "dots", "solid", "dots", "solid", "cross")
INK = "#1a1a1a"
GRID = "#c8c8c8"
LINE_COLOURS = ("#b2182b", "#2166ac", "#4d4d4d", "#762a83", "#1b7837", "#8c510a")
LINE_DASHES = ("6 3", "2 2", "8 2 2 2", "4 4", "1 3", "10 3")


WIDE = frozenset("·×")  # full-width in the CJK face that Chinese charts use first


def text_width(text: str, size: float) -> float:
    """Approximate advance width (generous, so labels never run off the chart): CJK, full-width
    characters and · × 1 em, others 0.56 em."""
    return sum(size if ord(c) >= 0x2E80 or c in WIDE else size * 0.56 for c in text)


def fitted(text: str, size: float, width: float) -> str:
    """The text, or where it is wider than `width` its start and end around an ellipsis (a configuration's label
    starts with what it is and ends with where it runs: both are kept; the table under the chart gives it whole)."""
    if text_width(text, size) <= width:
        return text
    head, tail = text[: len(text) // 2], text[len(text) // 2:]
    while head or tail:
        if len(head) >= len(tail):
            head = head[:-1]
        else:
            tail = tail[1:]
        short = head.rstrip() + "…" + tail.lstrip()
        if text_width(short, size) <= width:
            return short
    return "…"


def _f(x: float) -> str:
    """Coordinates with one decimal, no trailing zeros: stable text for the gold files."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _t(text: str) -> str:
    return escape(text, quote=True)


def nice_step(span: float, target: int = 6) -> float:
    raw = span / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def tick_text(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class Series:
    key: str
    label: str


@dataclass(frozen=True)
class Bar:
    label: str
    parts: tuple[float, ...]  # one value per series, in the chart's unit
    total_text: str  # direct label at the bar's end
    budget: float  # the recommended budget (k × total), drawn as a dashed outline beyond the bar


@dataclass(frozen=True)
class RefLine:
    label: str
    value: float


def _merge_close(lines: Sequence[RefLine], to_pos, min_gap: float) -> list[tuple[float, str]]:
    """Reference lines whose positions are within min_gap share one label ('A / B')."""
    placed: list[tuple[float, list[str]]] = []
    for line in sorted(lines, key=lambda l: (l.value, l.label)):
        pos = to_pos(line.value)
        if placed and abs(pos - placed[-1][0]) < min_gap:
            placed[-1][1].append(line.label)
        else:
            placed.append((pos, [line.label]))
    return [(pos, " / ".join(names)) for pos, names in placed]


def _defs(chart_id: str) -> str:
    out = ["<defs>"]
    for i, (fill, pattern) in enumerate(zip(PALETTE, PATTERNS)):
        if pattern == "solid":
            continue
        pid = f"{chart_id}-p{i}"
        mark = {"hatch": '<path d="M-1,1 L1,-1 M0,6 L6,0 M5,7 L7,5" stroke="#ffffff" stroke-width="1.2"/>',
                "dots": '<circle cx="3" cy="3" r="1.1" fill="#ffffff"/>',
                "cross": '<path d="M0,3 L6,3 M3,0 L3,6" stroke="#7a7a7a" stroke-width="0.8"/>'}[pattern]
        out.append(f'<pattern id="{pid}" patternUnits="userSpaceOnUse" width="6" height="6">'
                   f'<rect width="6" height="6" fill="{fill}"/>{mark}</pattern>')
    out.append("</defs>")
    return "".join(out)


def _fill(chart_id: str, i: int) -> str:
    return PALETTE[i] if PATTERNS[i] == "solid" else f"url(#{chart_id}-p{i})"


def _svg_open(chart_id: str, width: float, height: float, font_family: str, title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{chart_id}" role="img" '
            f'viewBox="0 0 {_f(width)} {_f(height)}" width="{_f(width)}" height="{_f(height)}" '
            f'font-family="{_t(font_family)}" aria-labelledby="{chart_id}-title">'
            f'<title id="{chart_id}-title">{_t(title)}</title>')


def _legend(series: Sequence[Series], colours: Sequence[int], chart_id: str, width: float, y0: float,
            size: float = 8.5) -> tuple[list[str], float]:
    """Swatches with their labels, wrapped into rows; returns the SVG parts and the height used."""
    x, y, out = 0.0, y0, []
    for i, s in enumerate(series):
        w = 15 + text_width(s.label, size) + 12
        if x + w > width and x > 0:
            x, y = 0.0, y + 14
        out.append(f'<rect x="{_f(x)}" y="{_f(y + 1)}" width="11" height="9" fill="{_fill(chart_id, colours[i])}" '
                   f'stroke="{INK}" stroke-width="0.5"/>')
        out.append(f'<text x="{_f(x + 15)}" y="{_f(y + 9)}" font-size="{_f(size)}" fill="{INK}">{_t(s.label)}</text>')
        x += w
    return out, y + 14 - y0


def stacked_bars(bars: Sequence[Bar], series: Sequence[Series], lines: Sequence[RefLine], *, x_title: str,
                 chart_id: str, font_family: str, title: str, colour_index: Sequence[int] | None = None,
                 width: float = 680, overflow_mark: str = "»") -> str:
    """Horizontal stacked bars, one per configuration, against vertical reference lines.

    colour_index[i] picks series i's fill from PALETTE, so a series keeps its colour in every chart."""
    colours = list(colour_index) if colour_index is not None else list(range(len(series)))
    size = 9
    label_w = min(max((text_width(b.label, size) for b in bars), default=60) + 8, width * 0.42)
    right_pad = 62
    plot_x0, plot_x1 = label_w, width - right_pad
    plot_w = plot_x1 - plot_x0
    # x range: everything, unless one bar dwarfs the GPU lines; then clip it (and say so at its end).
    data_max = max([max(sum(b.parts), b.budget) for b in bars] + [l.value for l in lines] + [1e-9])
    line_max = max((l.value for l in lines), default=0)
    x_max = min(data_max, 2.2 * line_max) if line_max else data_max
    step = nice_step(x_max)
    x_max = math.ceil(x_max * 1.02 / step) * step

    def X(v: float) -> float:
        return plot_x0 + plot_w * min(v, x_max) / x_max

    merged = _merge_close(lines, X, 10)
    # Line labels sit above the plot, staggered in rows so that they never overlap.
    label_rows: list[float] = []  # right edge of the last label in each row
    placed_labels = []
    for pos, text in merged:
        w = text_width(text, 8)
        left = min(max(pos - w / 2, plot_x0), width - w)
        for r, right in enumerate(label_rows):
            if left > right + 4:
                label_rows[r] = left + w
                break
        else:
            r = len(label_rows)
            label_rows.append(left + w)
        placed_labels.append((pos, left, r, text))
    legend_parts, legend_h = _legend(series, colours, chart_id, width, 2)
    labels_y0 = legend_h + 6
    top = labels_y0 + 11 * len(label_rows)
    bar_h, pitch = 11, 16
    plot_y0 = top + 4
    plot_y1 = plot_y0 + pitch * len(bars)
    height = plot_y1 + 34
    out = [_svg_open(chart_id, width, height, font_family, title), _defs(chart_id), *legend_parts]
    # Shapes of one kind are merged into one path: WeasyPrint styles and draws each SVG element on its
    # own, so fewer elements make the PDF markedly faster to build.
    grid, tick_texts = [], []
    tick = 0.0
    while tick <= x_max + 1e-9:
        x = X(tick)
        grid.append(f"M{_f(x)},{_f(plot_y0)}V{_f(plot_y1)}")
        tick_texts.append(f'<text x="{_f(x)}" y="{_f(plot_y1 + 11)}">{_t(tick_text(tick))}</text>')
        tick += step
    out.append(f'<path d="{"".join(grid)}" stroke="{GRID}" stroke-width="0.5" fill="none"/>')
    out.append(f'<g font-size="8" text-anchor="middle" fill="{INK}">{"".join(tick_texts)}</g>')
    out.append(f'<path d="M{_f(plot_x0)},{_f(plot_y1)}H{_f(plot_x1)}" stroke="{INK}" stroke-width="0.8"/>')
    out.append(f'<text x="{_f(plot_x0 + plot_w / 2)}" y="{_f(plot_y1 + 26)}" font-size="9" text-anchor="middle" '
               f'fill="{INK}">{_t(x_title)}</text>')
    segments: dict[int, list[str]] = {}
    budgets, breaks, halos, labels, totals = [], [], [], [], []
    for n, bar in enumerate(bars):
        y = plot_y0 + n * pitch + (pitch - bar_h) / 2
        label = fitted(bar.label, size, label_w - 8)
        title = f"<title>{_t(bar.label)}</title>" if label != bar.label else ""
        labels.append(f'<text x="{_f(plot_x0 - 5)}" y="{_f(y + bar_h - 2)}">{title}{_t(label)}</text>')
        total = sum(bar.parts)
        if bar.budget > total:  # the safety margin k × total, as a dashed outline
            budgets.append(f"M{_f(X(total))},{_f(y + 1)}H{_f(X(bar.budget))}V{_f(y + bar_h - 1)}H{_f(X(total))}")
        acc = 0.0
        for i, value in enumerate(bar.parts):
            if value <= 0:
                continue
            x0, x1 = X(acc), X(acc + value)
            acc += value
            if x1 - x0 < 0.05:
                continue
            segments.setdefault(colours[i], []).append(f"M{_f(x0)},{_f(y)}h{_f(x1 - x0)}v{bar_h}h{_f(x0 - x1)}Z")
        end = X(max(total, bar.budget))
        clipped = max(total, bar.budget) > x_max
        if clipped:  # a break mark where the bar leaves the plot
            bx = X(x_max) - 6
            breaks.append(f"M{_f(bx)},{_f(y - 1)}l3,{bar_h + 2}M{_f(bx + 3)},{_f(y - 1)}l3,{bar_h + 2}")
        text = bar.total_text + (f" {overflow_mark}" if clipped else "")
        halo_w = text_width(text, 8) + 2
        halos.append(f"M{_f(end + 2)},{_f(y + 1)}h{_f(halo_w)}v{bar_h - 2}h{_f(-halo_w)}Z")
        totals.append(f'<text x="{_f(end + 3)}" y="{_f(y + bar_h - 2)}">{_t(text)}</text>')
    out.append(f'<g font-size="{size}" text-anchor="end" fill="{INK}">{"".join(labels)}</g>')
    for colour, parts in sorted(segments.items()):
        out.append(f'<path d="{"".join(parts)}" fill="{_fill(chart_id, colour)}" stroke="#ffffff" stroke-width="0.4"/>')
    if budgets:
        out.append(f'<path d="{"".join(budgets)}" fill="none" stroke="{INK}" stroke-width="0.6" '
                   f'stroke-dasharray="2 1.5"/>')
    if breaks:
        out.append(f'<path d="{"".join(breaks)}" stroke="#ffffff" stroke-width="1.6" fill="none"/>')
    # reference lines over the bars, labelled directly; bar totals on a light halo over the lines
    for k, (pos, left, row, text) in enumerate(placed_labels):
        colour = LINE_COLOURS[k % len(LINE_COLOURS)]
        dash = LINE_DASHES[k % len(LINE_DASHES)]
        label_y = labels_y0 + 11 * row + 8
        out.append(f'<path d="M{_f(pos)},{_f(label_y + 2)}V{_f(plot_y1)}" stroke="{colour}" stroke-width="1.3" '
                   f'stroke-dasharray="{dash}"/>')
        out.append(f'<text x="{_f(left)}" y="{_f(label_y)}" font-size="8" fill="{colour}">{_t(text)}</text>')
    out.append(f'<path d="{"".join(halos)}" fill="#ffffff" fill-opacity="0.8"/>')
    out.append(f'<g font-size="8" fill="{INK}">{"".join(totals)}</g>')
    out.append("</svg>")
    return "".join(out)


def line_chart(xs: Sequence[float], ys: Sequence[float], lines: Sequence[RefLine], *, x_labels: Sequence[str],
               x_title: str, y_title: str, chart_id: str, font_family: str, title: str,
               width: float = 330, height: float = 230) -> str:
    """One series on log2 x / log10 y axes, with horizontal reference lines labelled at the right."""
    left, right, top, bottom = 44, 8, 8, 36
    x0, x1, y0, y1 = left, width - right, top, height - bottom
    lx = [math.log2(x) for x in xs]
    values = [v for v in list(ys) + [l.value for l in lines] if v > 0]
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    # narrow the decades to the 1-2-5 ticks that bracket the data
    ticks = [m * 10 ** e for e in range(int(math.log10(lo)), int(math.log10(hi)) + 1) for m in (1, 2, 5)]
    lo = max(t for t in ticks if t <= min(values))
    hi = min(t for t in ticks if t >= max(values))
    ticks = [t for t in ticks if lo <= t <= hi]

    def X(v: float) -> float:
        span = (lx[-1] - lx[0]) or 1
        return x0 + (x1 - x0) * (math.log2(v) - lx[0]) / span

    def Y(v: float) -> float:
        return y1 - (y1 - y0) * (math.log10(v) - math.log10(lo)) / ((math.log10(hi) - math.log10(lo)) or 1)

    out = [_svg_open(chart_id, width, height, font_family, title)]
    grid, y_texts, x_texts = [], [], []
    for t in ticks:
        y = Y(t)
        grid.append(f"M{_f(x0)},{_f(y)}H{_f(x1)}")
        y_texts.append(f'<text x="{_f(x0 - 3)}" y="{_f(y + 3)}">{_t(tick_text(t))}</text>')
    for x, label in zip(xs, x_labels):
        px = X(x)
        grid.append(f"M{_f(px)},{_f(y0)}V{_f(y1)}")
        x_texts.append(f'<text x="{_f(px)}" y="{_f(y1 + 11)}">{_t(label)}</text>')
    out.append(f'<path d="{"".join(grid)}" stroke="{GRID}" stroke-width="0.5" fill="none"/>')
    out.append(f'<g font-size="8" fill="{INK}"><g text-anchor="end">{"".join(y_texts)}</g>'
               f'<g text-anchor="middle">{"".join(x_texts)}</g></g>')
    out.append(f'<rect x="{_f(x0)}" y="{_f(y0)}" width="{_f(x1 - x0)}" height="{_f(y1 - y0)}" fill="none" '
               f'stroke="{INK}" stroke-width="0.8"/>')
    out.append(f'<text x="{_f(x0 + (x1 - x0) / 2)}" y="{_f(height - 8)}" font-size="9" text-anchor="middle" '
               f'fill="{INK}">{_t(x_title)}</text>')
    out.append(f'<text transform="translate(10 {_f(y0 + (y1 - y0) / 2)}) rotate(-90)" font-size="9" '
               f'text-anchor="middle" fill="{INK}">{_t(y_title)}</text>')
    for k, (pos, text) in enumerate(_merge_close(lines, Y, 9)):
        colour = LINE_COLOURS[k % len(LINE_COLOURS)]
        dash = LINE_DASHES[k % len(LINE_DASHES)]
        out.append(f'<path d="M{_f(x0)},{_f(pos)}H{_f(x1)}" stroke="{colour}" stroke-width="1.2" '
                   f'stroke-dasharray="{dash}"/>')
        out.append(f'<text x="{_f(x0 + 3)}" y="{_f(pos - 2)}" font-size="7.5" fill="{colour}">{_t(text)}</text>')
    points = " ".join(f"{_f(X(x))},{_f(Y(y))}" for x, y in zip(xs, ys))
    out.append(f'<polyline points="{points}" fill="none" stroke="{INK}" stroke-width="1.8"/>')
    r = 2.4
    markers = "".join(f"M{_f(X(x) - r)},{_f(Y(y))}a{r},{r} 0 1 0 {_f(2 * r)},0a{r},{r} 0 1 0 {_f(-2 * r)},0Z"
                      for x, y in zip(xs, ys))
    out.append(f'<path d="{markers}" fill="#ffffff" stroke="{INK}" stroke-width="1.2"/>')
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True)
class Span:
    """One bar of a schedule: a row label, from start to end (in the chart's unit), with text on the bar."""
    row: str
    start: float
    end: float
    text: str
    colour: int  # index into PALETTE (one per GPU type)


def schedule_chart(spans: Sequence[Span], *, length: float, tick: float, tick_label: str, x_title: str,
                   chart_id: str, font_family: str, title: str, legend: Sequence[Series] = (),
                   legend_colours: Sequence[int] = (), width: float = 680) -> str:
    """A Gantt-like chart: one row per span label, bars from start to end on an axis from 0 to `length`,
    ticks every `tick` labelled tick_label.format(n=…) (week 1, week 2…)."""
    size, row_h = 8.5, 18.0
    rows = list(dict.fromkeys(s.row for s in spans))
    label_w = min(220.0, max((text_width(r, size) for r in rows), default=0) + 8)
    plot_w = width - label_w - 8
    top = 4.0
    height = top + row_h * len(rows) + 34
    legend_parts, legend_h = _legend(legend, legend_colours, chart_id, width, height) if legend else ([], 0)
    out = [_svg_open(chart_id, width, height + legend_h, font_family, title), _defs(chart_id)]
    x_of = lambda v: label_w + plot_w * min(max(v / length, 0), 1)  # noqa: E731
    n = 0
    while n * tick <= length + 1e-9:
        x = x_of(n * tick)
        out.append(f'<line x1="{_f(x)}" y1="{_f(top)}" x2="{_f(x)}" y2="{_f(top + row_h * len(rows))}" '
                   f'stroke="{GRID}" stroke-width="0.5"/>')
        if n < length / tick:
            out.append(f'<text x="{_f(x + 2)}" y="{_f(top + row_h * len(rows) + 11)}" font-size="7.5" '
                       f'fill="{INK}">{_t(tick_label.format(n=n + 1))}</text>')
        n += 1
    for i, r in enumerate(rows):
        y = top + row_h * i
        out.append(f'<text x="{_f(label_w - 6)}" y="{_f(y + row_h / 2 + 3)}" font-size="{_f(size)}" '
                   f'text-anchor="end" fill="{INK}">{_t(r)}</text>')
        for s in (s for s in spans if s.row == r):
            x0, x1 = x_of(s.start), max(x_of(s.end), x_of(s.start) + 1.5)
            out.append(f'<rect x="{_f(x0)}" y="{_f(y + 3)}" width="{_f(x1 - x0)}" height="{_f(row_h - 6)}" '
                       f'fill="{_fill(chart_id, s.colour)}" stroke="{INK}" stroke-width="0.5"/>')
            fits_inside = text_width(s.text, 7.5) + 6 < x1 - x0
            tx = x0 + 3 if fits_inside else x1 + 3
            colour = "#ffffff" if fits_inside and s.colour < 4 else INK
            if not fits_inside and tx + text_width(s.text, 7.5) > width:
                tx, anchor = x0 - 3, "end"
            else:
                anchor = "start"
            out.append(f'<text x="{_f(tx)}" y="{_f(y + row_h / 2 + 3)}" font-size="7.5" text-anchor="{anchor}" '
                       f'fill="{colour}">{_t(s.text)}</text>')
    out.append(f'<text x="{_f(label_w + plot_w / 2)}" y="{_f(top + row_h * len(rows) + 26)}" font-size="8.5" '
               f'text-anchor="middle" fill="{INK}">{_t(x_title)}</text>')
    out.extend(legend_parts)
    out.append("</svg>")
    return "".join(out)
