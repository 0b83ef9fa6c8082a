"""Stop early when a threshold breaks (k6's ``abortOnFail`` with ``delayAbortEval``): a
``--fail-if`` condition marked ``@abort`` is judged as each timeline row closes, on the
rows of the last ``--abort-window`` seconds of the phase, from ``--abort-grace``
seconds into it (and never before one full window, so that a phase's first
connections and cold caches do not stop it). When one breaks, the phase stops as if its
time were up: what it measured is kept and reported, no later phase runs, the result
says which condition broke (``threshold_abort``) and the run exits 4.
"""
from __future__ import absolute_import, division, print_function

from collections import deque

from gloaddriver.measure import stats
from gloaddriver.report import thresholds
from gloaddriver.run.hooks import Listener


def _counts(rows, op):
    """The window's attempted, ok, errors and seconds: the phase's, or one op's of a mix."""
    attempted = ok = bad = 0
    for r in rows:
        b = r if op is None else (r.get('by_op') or {}).get(op)
        if b is not None:
            attempted += b['attempted']
            ok += b['ok']
            bad += b['errors']
    return attempted, ok, bad, sum(r['seconds'] for r in rows)


def _latency(cond, hist):
    """A latency metric of the window's histogram; None when no op succeeded in it."""
    if not hist.get_total_count():
        return None
    if cond['metric'] == 'max':
        return hist.get_max_value()
    pct = [p for key, p in stats.measured_percentiles() if key == cond['latency_key']]
    return stats.values_at_percentiles(hist, pct)[0]


def _value(cond, rows, window_hist):
    """The condition's metric over ``rows`` (``window_hist(op)``: their latencies); None
    when the window has nothing to judge it on."""
    if cond['latency_key']:
        return _latency(cond, window_hist(cond['op']))
    attempted, ok, bad, seconds = _counts(rows, cond['op'])
    if cond['metric'] == 'errors':
        if cond['percent']:
            return 100.0 * bad / attempted if attempted else 0.0
        return bad
    n = attempted if cond['metric'] == 'ops_per_sec' else ok
    return n / seconds if seconds > 0 else None


class _Decoded(object):
    """A row's histograms, each decoded once, when first needed (a decode costs 0.2 to
    0.3 ms, in the hub: never once per row and condition)."""

    def __init__(self, row):
        self.row = row
        self._hists = {}

    def hist(self, op):
        if op not in self._hists:
            b = self.row if op is None else (self.row.get('by_op') or {}).get(op)
            encoded = b.get('histogram') if b is not None else None
            self._hists[op] = stats.decode_histogram(encoded) if encoded else None
        return self._hists[op]


class AbortOnFail(Listener):
    """Judges the @abort conditions on a sliding window of each phase's rows."""

    def __init__(self, conditions, window, grace):
        self.conditions = [c for c in conditions if c['abort']]
        self.window = window
        self.grace = max(grace, window)
        self.broke = None
        self._rows = deque()

    def start(self, phase):
        self._rows = deque()

    def interval(self, phase, row, notes):
        if self.broke is not None:
            return
        window = self._rows
        window.append(_Decoded(row))
        # Rows that ended more than a window ago leave it (one row at least stays).
        while len(window) > 1 and window[0].row['t'] <= row['t'] - self.window + 1e-6:
            window.popleft()
        if row['t'] + 1e-6 < self.grace:
            return
        rows = [d.row for d in window]
        added = {}

        def window_hist(op):
            """The window's latencies (of one op), added up once per interval."""
            if op not in added:
                hist = added[op] = stats.new_histogram()
                for d in window:
                    h = d.hist(op)
                    if h is not None:
                        hist.add(h)
            return added[op]

        for cond in self.conditions:
            if cond['phase'] is not None and cond['phase'] != phase.name:
                continue
            value = _value(cond, rows, window_hist)
            if value is None or thresholds.holds(cond, value):
                continue
            scale = cond['scale']
            self.broke = {
                'condition': cond['text'], 'phase': phase.name, 'op': cond['op'],
                'value': value / scale, 'limit': cond['limit'] / scale,
                'unit': cond['unit'], 'at_seconds': row['t'],
                'window_seconds': round(sum(r['seconds'] for r in rows), 3)}
            phase.budget.stop(reason(self.broke))
            return

    def end(self, phase, result):
        if self.broke is not None and self.broke['phase'] == phase.name:
            result['threshold_abort'] = self.broke


def reason(broke):
    """The run's ``aborted`` line for a condition that broke."""
    return ('threshold %s broke at %.1f s into phase %s: %s%s over the last %.1f s; the run '
            'stopped early (--fail-if @abort)' % (
                broke['condition'], broke['at_seconds'], broke['phase'],
                '%.4g' % broke['value'], ' ' + broke['unit'] if broke['unit'] else '',
                broke['window_seconds']))
