"""What a phase of pgbench-style scripts adds to its counts: retries, failures by class
and, with --per-statement (pgbench's ``-r``), latency, failures and retries per command.

The executor (backends/postgres/script_run.py) records into plain lists and dicts
indexed by command, as the op loop records into ``OpStats.lat``: a dict update per
command, no histogram code. ``block()`` folds them into the phase's ``script`` block
once per phase; ``merged()`` adds the blocks of processes that ran side by side (their
histograms are in the block, so percentiles of a merge are exact, not averaged).
"""
from __future__ import absolute_import, division, print_function

from collections import defaultdict

from gloaddriver.measure import stats

# SQLSTATE -> class of a failure pgbench retries (with --max-tries); others are 'other'.
RETRYABLE = {'40001': 'serialization', '40P01': 'deadlock'}
CLASSES = ('serialization', 'deadlock', 'other')
# Commands the per-statement report leaves out: the jumps an \elif or \else compiles to
# (the \if's own line is kept, as pgbench lists it).
_UNLISTED = ('goto',)


def _text(data):
    return data.decode('ascii') if isinstance(data, bytes) else data


class ScriptFigures(object):
    """A phase's figures of the scripts (reset by ``start``, read by ``block``)."""

    def __init__(self, scripts, protocol, max_tries, per_statement):
        self.scripts = scripts
        self.protocol = protocol
        self.max_tries = max_tries
        self.per_statement = per_statement
        self.scale = None
        # Per script, per command: {latency us: count}, failures, retries. Made once and
        # cleared in place: the workers' steps hold these very lists and dicts.
        self.lat = [[defaultdict(int) for _c in s.commands] for s in scripts]
        self.failed = [[0] * len(s.commands) for s in scripts]
        self.retried_at = [[0] * len(s.commands) for s in scripts]
        self.failures = dict((c, 0) for c in CLASSES)
        self.start()

    def start(self):
        self.retried = 0                     # transactions retried at least once
        self.retries = 0                     # retries in all
        for c in CLASSES:
            self.failures[c] = 0
        for lat, failed, retried in zip(self.lat, self.failed, self.retried_at):
            for d in lat:
                d.clear()
            failed[:] = [0] * len(failed)
            retried[:] = [0] * len(retried)

    def block(self):
        out = {'protocol': self.protocol, 'max_tries': self.max_tries, 'scale': self.scale,
               'retried': self.retried, 'retries': self.retries,
               'failures': dict(self.failures)}
        if self.per_statement:
            rows = []
            for i, s in enumerate(self.scripts):
                for j, c in enumerate(s.commands):
                    if c.kind in _UNLISTED:
                        continue
                    hist = stats.new_histogram()
                    total = 0
                    for value, count in self.lat[i][j].items():
                        value = max(1, min(value, stats.HIGHEST_US))
                        hist.record_value(value, count)
                        total += value * count
                    rows.append(_row(s.name, c.line, c.text, hist, total,
                                     self.failed[i][j], self.retried_at[i][j]))
            out['statements'] = rows
        return out


def _row(script, line, command, hist, sum_us, failures, retries):
    return {'script': script, 'line': line, 'command': command,
            'count': hist.get_total_count(), 'latency_us': stats.latency_summary(hist, sum_us),
            'latency_sum_us': int(sum_us), 'histogram': _text(hist.encode()),
            'failures': failures, 'retries': retries}


def merged(blocks):
    """One ``script`` block of the blocks of processes that ran side by side."""
    blocks = [b for b in blocks if b]
    if not blocks:
        return None
    first = blocks[0]
    out = {'protocol': first['protocol'], 'max_tries': first['max_tries'],
           'scale': first.get('scale'),
           'retried': sum(b['retried'] for b in blocks),
           'retries': sum(b['retries'] for b in blocks),
           'failures': dict((c, sum(b['failures'].get(c, 0) for b in blocks))
                            for c in CLASSES)}
    if all('statements' in b for b in blocks):
        rows = []
        for k, row in enumerate(first['statements']):
            same = [b['statements'][k] for b in blocks]
            hist = stats.new_histogram()
            for r in same:
                hist.add(stats.decode_histogram(r['histogram']))
            rows.append(_row(row['script'], row['line'], row['command'], hist,
                             sum(r['latency_sum_us'] for r in same),
                             sum(r['failures'] for r in same),
                             sum(r['retries'] for r in same)))
        out['statements'] = rows
    return out
