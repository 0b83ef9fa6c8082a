"""Small inline-SVG charts: lines over time, a percentile spectrum, bars.

Drawn here in Python so the page needs no script and no network to show
them, prints as it looks, and a chart's numbers can be checked in the markup.
Each chart is a ``<figure class="chart">`` whose data attributes name it; each
line is a ``<polyline class="series">`` (one per unbroken stretch of data).
"""
from __future__ import absolute_import, division, print_function

import math

PALETTE = ('#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',
           '#17becf', '#7f7f7f', '#bcbd22')
WIDTH, HEIGHT = 640, 250
LEFT, RIGHT, TOP, BOTTOM = 72, 16, 12, 58


def esc(text):
    return (u'%s' % (text,)).replace(u'&', u'&amp;').replace(u'<', u'&lt;').replace(
        u'>', u'&gt;').replace(u'"', u'&quot;')


def number(v):
    """1234567 -> '1.23M', 0.25 -> '0.25': short axis labels."""
    a = abs(v)
    for div, suffix in ((1e9, 'G'), (1e6, 'M'), (1e3, 'k')):
        if a >= div:
            return ('%.3g' % (v / div)) + suffix
    return '%.3g' % v if a else '0'


def nice_ticks(lo, hi, count=5):
    """Round tick values covering [lo, hi] (steps of 1, 2 or 5 times a power of ten)."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    ticks = []
    v = first
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 10))
        v += step
    if ticks[-1] < hi:
        ticks.append(round(v, 10))
    return ticks


def log_ticks(lo, hi):
    lo = max(lo, 1e-9)
    a, b = int(math.floor(math.log10(lo))), int(math.ceil(math.log10(hi)))
    if a == b:
        b += 1
    return [10.0 ** k for k in range(a, b + 1)]


class _Scale(object):
    def __init__(self, lo, hi, a, b, log=False):
        self.log = log
        if log:
            lo, hi = math.log10(lo), math.log10(hi)
        self.lo, self.hi, self.a, self.b = lo, hi if hi > lo else lo + 1, a, b

    def __call__(self, v):
        if self.log:
            v = math.log10(max(v, 1e-9))
        return self.a + (v - self.lo) * (self.b - self.a) / (self.hi - self.lo)


_EMPTY = u'<p class="empty">no data</p></figure>'


def _head(kind, title, phase, count):
    """The figure's opening tag (named by its data attributes) and caption."""
    return (u'<figure class="chart" data-chart="%s"%s data-series="%d">'
            u'<figcaption>%s</figcaption>' % (
                esc(kind), u' data-phase="%s"' % esc(phase) if phase else u'', count, esc(title)))


def _legend(series, styles, y):
    out, x = [], LEFT
    for i, (label, _pts) in enumerate(series):
        color, dash = styles[i]
        out.append(u'<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                   % (x, y, x + 18, y, color, u' stroke-dasharray="5 3"' if dash else u''))
        out.append(u'<text x="%d" y="%d" class="legend">%s</text>' % (x + 22, y + 4, esc(label)))
        x += 30 + 7 * len(label)
    return out


def line_chart(kind, title, series, x_label, y_label, log_y=False, x_axis=None, dashed=(),
               phase=None, x_min=None, bands=(), marks=()):
    """series: [(label, [(x, y), ...])]; a y of None breaks the line. x_min: where the
    x axis starts at the latest (0 for time). bands: [(x0, x1, label)] shaded behind
    the lines (outages); marks: [(x, label)] as vertical dashed lines (faults).

    x_axis: optional (transform, [(tick value, label)]) for a non-linear x
    (the percentile spectrum).
    """
    series = [(label, pts) for label, pts in series if any(y is not None for _x, y in pts)]
    xs = [x for _l, pts in series for x, y in pts if y is not None]
    ys = [y for _l, pts in series for _x, y in pts if y is not None]
    head = _head(kind, title, phase, len(series))
    if not ys:
        return head + _EMPTY
    transform = x_axis[0] if x_axis else (lambda v: v)
    tx = [transform(x) for x in xs]
    xlo, xhi = min(tx), max(tx)
    if x_min is not None:
        xlo = min(xlo, x_min)
    if x_axis:
        xticks = [(transform(v), lab) for v, lab in x_axis[1] if transform(v) <= xhi + 1e-9]
        xhi = max([xhi] + [v for v, _l in xticks])
    else:
        xticks = [(v, number(v)) for v in nice_ticks(xlo, xhi)]
        xlo, xhi = min(xlo, xticks[0][0]), max(xhi, xticks[-1][0])
    if log_y:
        positive = [y for y in ys if y > 0] or [1]
        yt = log_ticks(min(positive), max(positive))
    else:
        yt = nice_ticks(0, max(ys) or 1)
    sx = _Scale(xlo, xhi, LEFT, WIDTH - RIGHT)
    sy = _Scale(yt[0], yt[-1], HEIGHT - BOTTOM, TOP, log=log_y)
    out = [head, u'<svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" '
           u'aria-label="%s">' % (WIDTH, HEIGHT, WIDTH, HEIGHT, esc(title))]
    for v in yt:
        y = sy(v)
        out.append(u'<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>'
                   % (LEFT, WIDTH - RIGHT, y, y))
        out.append(u'<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>'
                   % (LEFT - 6, y + 4, number(v)))
    for v, lab in xticks:
        x = sx(v)
        out.append(u'<line class="grid" x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>'
                   % (x, x, TOP, HEIGHT - BOTTOM))
        out.append(u'<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>'
                   % (x, HEIGHT - BOTTOM + 16, esc(lab)))
    out.append(u'<text class="axis" x="%d" y="%d" text-anchor="middle">%s</text>'
               % ((LEFT + WIDTH - RIGHT) // 2, HEIGHT - BOTTOM + 32, esc(x_label)))
    out.append(u'<text class="axis" transform="translate(14 %d) rotate(-90)" '
               u'text-anchor="middle">%s</text>' % ((TOP + HEIGHT - BOTTOM) // 2, esc(y_label)))
    for x0, x1, label in bands:
        left, right = sx(max(x0, xlo)), sx(min(x1, xhi))
        out.append(u'<rect class="band" data-label="%s" x="%.1f" y="%d" width="%.1f" '
                   u'height="%d" fill="#d32f2f" fill-opacity="0.12"><title>%s</title></rect>'
                   % (esc(label), left, TOP, max(right - left, 1.0), HEIGHT - BOTTOM - TOP,
                      esc(label)))
    for x, label in marks:
        if xlo <= x <= xhi:
            out.append(u'<line class="mark" data-label="%s" x1="%.1f" x2="%.1f" y1="%d" y2="%d" '
                       u'stroke="#555" stroke-dasharray="3 3"><title>%s</title></line>'
                       % (esc(label), sx(x), sx(x), TOP, HEIGHT - BOTTOM, esc(label)))
    styles = []
    for i, (label, pts) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        dash = label in dashed
        styles.append((color, dash))
        for run in _runs(pts, log_y):
            coords = u' '.join(u'%.1f,%.1f' % (sx(transform(x)), sy(y)) for x, y in run)
            out.append(u'<polyline class="series" data-label="%s" data-points="%d" fill="none" '
                       u'stroke="%s" stroke-width="1.8"%s points="%s"><title>%s</title></polyline>'
                       % (esc(label), len(run), color,
                          u' stroke-dasharray="5 3"' if dash else u'', coords, esc(label)))
            if len(run) == 1:   # a lone point draws no line: mark it
                x, y = run[0]
                out.append(u'<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>'
                           % (sx(transform(x)), sy(y), color))
    out.extend(_legend(series, styles, HEIGHT - 10))
    out.append(u'</svg></figure>')
    return u''.join(out)


def _runs(pts, log_y):
    run = []
    for x, y in pts:
        if y is None or (log_y and y <= 0):
            if run:
                yield run
            run = []
        else:
            run.append((x, y))
    if run:
        yield run


def bar_chart(kind, title, bars, unit, phase=None):
    """bars: [(label, value)] drawn as horizontal bars, largest first."""
    bars = sorted(((l, v) for l, v in bars if v), key=lambda b: -b[1])
    head = _head(kind, title, phase, len(bars))
    if not bars:
        return head + _EMPTY
    row, left = 20, 130
    height = TOP + row * len(bars) + 10
    top = max(v for _l, v in bars)
    out = [head, u'<svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" '
           u'aria-label="%s">' % (WIDTH, height, WIDTH, height, esc(title))]
    for i, (label, v) in enumerate(bars):
        y = TOP + i * row
        w = max(1.0, (WIDTH - left - 90) * v / top)
        out.append(u'<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>'
                   % (left - 6, y + 13, esc(label)))
        out.append(u'<rect class="bar" data-label="%s" x="%d" y="%d" width="%.1f" height="%d" '
                   u'fill="%s"><title>%s: %s %s</title></rect>'
                   % (esc(label), left, y + 2, w, row - 5, PALETTE[0], esc(label), v, esc(unit)))
        out.append(u'<text class="tick" x="%.1f" y="%d">%s</text>'
                   % (left + w + 6, y + 13, esc('%.4g %s' % (v, unit))))
    out.append(u'</svg></figure>')
    return u''.join(out)
