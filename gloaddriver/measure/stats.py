"""Per-operation counters and latency histograms.

The hot path records one latency as ``op.lat[int(us)] += 1`` into a plain
dict of exact microsecond values: one dict update, no Python-level histogram
code per op. The reporter drains those dicts once per interval into HdrHistograms
(``record_value(value, count)`` once per distinct value), which is where
percentiles, merging and encoding come from. Counts are exact; HdrHistogram
keeps 3 significant digits of each value.
"""
from __future__ import absolute_import, division, print_function

import ctypes
import sys
from collections import defaultdict

from hdrh.histogram import HdrHistogram

from gloaddriver import errors
from gloaddriver.measure import libraries

HIGHEST_US = 3600 * 1000 * 1000   # one hour: anything longer is clamped
SIG_FIGS = 3
DEFAULT_PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)


def percentile_key(pct):
    """A percentile's key in a latency block: the digits without the point (99.9 ->
    ``p999``, 99.99 -> ``p9999``), as results have always named them."""
    return 'p' + ('%g' % pct).replace('.', '')


def percentile_label(pct):
    """How a report shows it: ``p99.9``."""
    return 'p%g' % pct


# Every result holds today's percentiles (every reader keeps working); --percentiles
# adds its own (choose_percentiles): (key, percentile) pairs, ascending.
PERCENTILES = tuple((percentile_key(p), p) for p in DEFAULT_PERCENTILES)
_measured = [PERCENTILES]


def choose_percentiles(pcts):
    """--percentiles: latency blocks made from now on in this process hold these beside
    the defaults (the run, its processes' merge and its live outputs call it once)."""
    both = sorted(set(DEFAULT_PERCENTILES) | set(pcts or ()))
    _measured[0] = tuple((percentile_key(p), p) for p in both)


def measured_percentiles():
    """The (key, percentile) pairs a latency block holds in this process."""
    return _measured[0]


def new_histogram():
    return HdrHistogram(1, HIGHEST_US, SIG_FIGS)


def reset_histogram(hist):
    """``hist.reset()`` in one memset: hdrh's own zeroes its counts one ctypes item at a
    time, 1.6 ms for ours, once an interval for every op. hdrh still resets the rest
    (its reset sees no counts to clear)."""
    n = hist.counts_len
    hist.counts_len = 0
    try:
        hist.reset()
    finally:
        hist.counts_len = n
    ctypes.memset(ctypes.addressof(hist.counts), 0, ctypes.sizeof(hist.counts))


def decode_histogram(encoded):
    return HdrHistogram.decode(encoded)


def values_at_percentiles(hist, percentiles):
    """hdrh's ``get_value_at_percentile`` of each of ``percentiles`` (ascending), from
    one walk over the counts instead of one per percentile.

    The timeline closes a row per progress interval in the hub, and hdrh's walk is a
    Python method call per count slot, thousands of them per percentile: a row's
    five percentiles held the hub 3.3 ms on 2.7 and 0.9 ms on 3.11 (idle; 20 and
    5 ms on a busy machine), time the ops in flight then carried as latency. Here
    the counts come out of their ctypes array in slices (C), and the walk stops at
    the last percentile's slot.
    """
    # A decoded histogram may hold fewer count slots than its layout (hdrh reads the
    # missing ones as 0).
    limit = min(hist.counts_len, hist.encoder.payload.counts_len)
    targets = [hist.get_target_count_at_percentile(p) for p in percentiles]
    out = []
    total = 0
    k = 0
    want = targets[0] if targets else None
    base = 0
    while base < limit and k < len(targets):
        # Slices of 1024: latencies fill the low slots, and a slice of all 23,552
        # would cost more than the walk.
        for offset, count in enumerate(hist.counts[base:min(base + 1024, limit)]):
            if not count:
                continue
            total += count
            while total >= want:
                value = hist.get_value_from_index(base + offset)
                out.append(hist.get_highest_equivalent_value(value) if percentiles[k]
                           else hist.get_lowest_equivalent_value(value))
                k += 1
                if k == len(targets):
                    return out
                want = targets[k]
        base += 1024
    return out + [0] * (len(targets) - k)   # an empty histogram, as hdrh says


def latency_summary(hist, sum_us):
    """p50/p90/p95/p99/p99.9 (and those of --percentiles)/max/mean in microseconds
    (None when empty).

    The mean comes from the exact sum of recorded values, not from the
    histogram (hdrh's mean iterator also recurses without end on 2.7).
    """
    count = hist.get_total_count()
    pcts = _measured[0]
    if count == 0:
        return dict((name, None) for name, _pct in pcts + (('max', 0), ('mean', 0)))
    values = values_at_percentiles(hist, [pct for _name, pct in pcts])
    out = dict((name, v) for (name, _pct), v in zip(pcts, values))
    out['max'] = hist.get_max_value()
    out['mean'] = round(sum_us / count, 1)
    return out


class OpStats(object):
    """Everything recorded for one op type (insert, select, ...) in one phase.

    Workers touch ``attempted`` (before the op), ``lat`` (after a success),
    ``misses`` and the error counters; ``ok`` is derived from the latencies,
    so the invariant ok + failed + timed_out == attempted is checked, not
    assumed.
    """

    __slots__ = ('name', 'attempted', 'timed_out', 'misses', 'failed', 'samples', 'origins',
                 'lat', 'hist', 'interval', 'sum_us', 'checksum',
                 'lat_co', 'hist_co', 'interval_co', 'sum_co', 'late', 'dropped')

    def __init__(self, name):
        self.name = name
        self.attempted = 0
        self.timed_out = 0
        self.misses = 0
        self.failed = {}       # error kind -> count
        self.samples = {}      # error kind -> first message seen
        self.origins = {}      # error kind -> FILE:LINE that raised its first (client errors)
        self.lat = defaultdict(int)
        self.hist = new_histogram()
        self.interval = new_histogram()
        self.sum_us = 0
        self.checksum = 0      # with --checksum: sum of crc32 of every result
        # Open loop only (--rate): latency from the intended start, made lazily
        # (a histogram of this range is ~360 KB).
        self.lat_co = None
        self.hist_co = None
        self.interval_co = None
        self.sum_co = 0
        self.late = 0
        self.dropped = 0

    def open_loop(self):
        self.lat_co = defaultdict(int)
        self.hist_co = new_histogram()
        self.interval_co = new_histogram()

    def error(self, exc):
        """Count one failed op; a timeout is its own outcome, not a failure. True for
        the first of its kind: only then is its message kept and, for an exception not
        of ours, where it was raised (called in the except block that caught it)."""
        kind = getattr(exc, 'kind', None)
        if kind is None:
            # Not one of ours: a bug or a library error we do not map yet.
            # Counted and shown, never swallowed.
            kind = 'client:%s' % exc.__class__.__name__
        if kind == 'timeout':
            self.timed_out += 1
        else:
            self.failed[kind] = self.failed.get(kind, 0) + 1
        if kind not in self.samples:
            self.samples[kind] = str(exc)[:300]
            if kind.startswith('client:'):
                where = origin(exc)
                if where is not None:
                    self.origins[kind] = where
            return True
        return False

    def drain(self):
        """Fold the raw latencies into the phase histogram; return the interval's.

        Under --rate the interval's latencies from the intended start are left
        in ``interval_co``.
        """
        lat, self.lat = self.lat, defaultdict(int)
        interval = self.interval
        reset_histogram(interval)
        record = interval.record_value
        total = 0
        for value, count in lat.items():
            value = 1 if value < 1 else (HIGHEST_US if value > HIGHEST_US else value)
            record(value, count)
            total += value * count
        self.sum_us += total
        self.hist.add(interval)
        if self.lat_co is not None:
            lat_co, self.lat_co = self.lat_co, defaultdict(int)
            reset_histogram(self.interval_co)
            record = self.interval_co.record_value
            for value, count in lat_co.items():
                value = 1 if value < 1 else (HIGHEST_US if value > HIGHEST_US else value)
                record(value, count)
                self.sum_co += value * count
            self.hist_co.add(self.interval_co)
        return interval

    @property
    def ok(self):
        return self.hist.get_total_count() + sum(self.lat.values())

    @property
    def failed_total(self):
        return sum(self.failed.values())

    def check(self):
        """Raise if an attempted op is not accounted for (a bug in the driver)."""
        done = self.ok + self.failed_total + self.timed_out
        if done != self.attempted:
            raise errors.GloadError(
                'accounting bug in %s: attempted %d but ok+failed+timed_out = %d'
                % (self.name, self.attempted, done))


def _rank(path):
    """How much a frame of ``path`` says to a user: 2 their own code, 1 a library (the
    standard one, or an installed package), 0 gloaddriver's."""
    lib = libraries.library(path)
    return 2 if lib == libraries.USER else 0 if lib == libraries.OWN else 1


def raised_at(exc):
    """The traceback of ``exc`` while it is being handled (or its own, on 3.x)."""
    info = sys.exc_info()
    if info[1] is exc and info[2] is not None:
        return info[2]
    return getattr(exc, '__traceback__', None)


def origin(exc):
    """FILE:LINE where ``exc`` was raised, as its user would look for it: the innermost
    frame of their own code (outside gloaddriver, the standard library and installed
    packages: the line of their op that called SQLAlchemy, say, not SQLAlchemy's line
    that raised), else the innermost outside gloaddriver (the library it called), else
    the innermost; None without a traceback."""
    tb = raised_at(exc)
    found, rank = None, -1
    while tb is not None:
        path = tb.tb_frame.f_code.co_filename
        r = _rank(path)
        if r >= rank:
            found, rank = (path, tb.tb_lineno), r
        tb = tb.tb_next
    return '%s:%d' % found if found else None


def merge_counts(dicts):
    out = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out
