"""--hlog PREFIX: each phase's latencies per interval in HdrHistogram's interval log format
(the ``.hlog`` files wrk2, HdrHistogram's HistogramLogProcessor and its plotters read).

One file per phase, ``PREFIX.PHASE.hlog`` (a phase run again, as a round of --repeat or
a step of --find-max, adds its run's number: ``PREFIX.insert.2.hlog``). Each file has
the format's header (version, ``StartTime`` and ``BaseTime`` at the phase's measured
window's opening, in seconds since the epoch, the legend), then per interval one
untagged line with the phase's latencies (what the JSON's timeline row holds, in
microseconds) and one line per op, tagged with the op's name (``Tag=select,...``).
Interval timestamps are seconds from ``StartTime``; the max column is milliseconds.

Nothing is encoded here: a timeline row already holds its interval's histogram in
HdrHistogram's compressed, base64 form, which is what a log line carries. The file is
written and flushed from the ticker (``interval``), never from the workers, so a run
killed mid-phase keeps every interval closed before the kill.
"""
from __future__ import absolute_import, division, print_function

import io
import time

from gloaddriver import errors
from gloaddriver.measure import stats
from gloaddriver.measure.window import text
from gloaddriver.run.hooks import Listener

# Our histograms count microseconds; the log's max column is milliseconds, as wrk2 writes.
MAX_UNIT_RATIO = 1000.0
FORMAT_VERSION = '1.3'   # the version whose lines may carry a Tag=NAME, field


def path_for(prefix, name, occurrence):
    """The log file of a phase's ``occurrence``-th run (1 for its first)."""
    return '%s.%s%s.hlog' % (prefix, name, '' if occurrence == 1 else '.%d' % occurrence)


def header(start_unix):
    """The lines before the intervals, as HdrHistogram's own writers put them."""
    stamp = time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(start_unix))
    return ['#[Logged with gloaddriver: latencies in microseconds]',
            '#[Histogram log format version %s]' % FORMAT_VERSION,
            '#[StartTime: %.3f (seconds since epoch), %sZ]' % (start_unix, stamp),
            '#[BaseTime: %.3f (seconds since epoch)]' % start_unix,
            '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"']


def interval_line(start, length, max_us, payload, tag=None):
    """One interval: its start (seconds from StartTime), length, max (ms) and payload."""
    return '%s%.3f,%.3f,%.3f,%s' % ('Tag=%s,' % tag if tag else '', start, length,
                                    max_us / MAX_UNIT_RATIO, payload)


def _op_histogram(st):
    """The op's histogram of the interval just closed (from the intended start under
    --rate, as the row's own latency)."""
    return st.interval_co if st.interval_co is not None else st.interval


class HistogramLog(Listener):
    """Writes each phase's interval log as its rows close."""

    def __init__(self, prefix):
        self.prefix = prefix
        self._seen = {}       # phase name -> how many times it ran
        self._file = None
        self._written_t = 0.0

    def start(self, phase):
        # Opened before the window: the open is not the client's syscall.
        n = self._seen[phase.name] = self._seen.get(phase.name, 0) + 1
        path = path_for(self.prefix, phase.name, n)
        try:
            self._file = io.open(path, 'w', encoding='ascii', newline='\n')
        except (IOError, OSError) as e:
            self._file = None
            errors.say('--hlog %s was not written: %s' % (path, getattr(e, 'strerror', e)))
        self._written_t = 0.0

    def opened(self, phase):
        self._write(header(phase.window.wall0))

    def interval(self, phase, row, notes):
        self._row(phase, row, [(st, _op_histogram(st)) for st in phase.ops])

    def end(self, phase, result):
        # The last, partial interval (the ticker was stopped before it): the timeline's
        # finish drained it into each op's interval histogram.
        rows = phase.rows or []
        if rows and rows[-1]['t'] > self._written_t and rows[-1]['ok']:
            last = dict(rows[-1], seconds=round(rows[-1]['t'] - self._written_t, 4))
            ops = [(st, _op_histogram(st)) for st in phase.ops]
            whole = stats.new_histogram()
            for _st, hist in ops:
                whole.add(hist)
            last['histogram'] = text(whole.encode())
            last['latency_us'] = {'max': whole.get_max_value()}
            self._row(phase, last, ops, encode=True)
        if self._file is not None:
            self._file.close()
            self._file = None

    def _row(self, phase, row, ops, encode=False):
        """The row's lines: untagged for the phase, then one per op that had a success."""
        start, length = max(row['t'] - row['seconds'], 0.0), row['seconds']
        self._written_t = row['t']
        if not row['histogram']:
            return
        lines = [interval_line(start, length, row['latency_us']['max'], row['histogram'])]
        by_op = row.get('by_op')
        for st, hist in ops:
            count = hist.get_total_count()
            if not count:
                continue
            payload = row['histogram'] if len(ops) == 1 and not encode else \
                (by_op[st.name]['histogram'] if by_op and not encode else text(hist.encode()))
            lines.append(interval_line(start, length, hist.get_max_value(), payload, st.name))
        self._write(lines)

    def _write(self, lines):
        if self._file is None:
            return
        try:
            self._file.write(u''.join(u'%s\n' % line for line in lines))
            self._file.flush()
        except (IOError, OSError) as e:   # a full disk: the run goes on without its log
            errors.say('--hlog: %s; no more interval logs this phase'
                       % getattr(e, 'strerror', e))
            self._file = None
