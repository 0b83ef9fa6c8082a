"""A run's result rebuilt from its journal (run/journal.py writes it): what
``gloaddriver report JOURNAL`` prints and writes.

Each phase that finished is its ``phase`` record, the result ``--json`` would have
held for it. A journal that ends without its ``end`` record belongs to a run that was
cut short (killed, its machine lost): the phase it was in is rebuilt from the
intervals written before the cut, as a partial phase whose counts and latencies are
its rows' (exact: the rows hold counts and histograms), and the result's ``aborted``
says that the run was cut short and where. A torn last line (the kill came while it
was written) is left out.
"""
from __future__ import absolute_import, division, print_function

import io
import json

from gloaddriver import errors
from gloaddriver.measure import run_result, stats
from gloaddriver.measure.phase_result import Counts, PhaseResult
from gloaddriver.measure.timeline import added, with_rate

CUT_SHORT = 'cut short'


def read(path):
    """The journal's records, and whether its last line was torn."""
    try:
        with io.open(path, encoding='utf-8') as f:
            lines = f.read().split(u'\n')
    except (IOError, OSError) as e:
        raise errors.ConfigError('cannot read journal %s: %s'
                                 % (path, getattr(e, 'strerror', None) or e))
    records, torn = [], False
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            if any(rest.strip() for rest in lines[n + 1:]):
                raise errors.ConfigError('journal %s: line %d is not JSON' % (path, n + 1))
            torn = True
    if not records or records[0].get('type') != 'run' or 'manifest' not in records[0]:
        raise errors.ConfigError('%s is not a gloaddriver journal (its first line is not '
                                 'the run\'s)' % path)
    return records, torn


def rebuild(path):
    """The result of the run whose journal is at ``path``."""
    records, _torn = read(path)
    head = records[0]
    rounds = head.get('rounds') or 1
    phases, current, end = [], None, None
    for r in records[1:]:
        kind = r.get('type')
        if kind == 'phase_start':
            current = {'start': r, 'rows': []}
        elif kind == 'interval' and current is not None:
            current['rows'].append(r['row'])
        elif kind == 'phase':
            result = r['result']
            if rounds > 1:
                result['repeat'] = r['round']
            phases.append(result)
            if current is not None and current['start']['phase'] == result['name']:
                current = None
        elif kind == 'end':
            end = r
    if end is not None:
        return run_result.build(head['manifest'], phases, end.get('aborted'),
                                verify=end.get('verify'), faults=end.get('faults'),
                                live=end.get('live'), repeat=rounds,
                                find_max=end.get('find_max'))
    where = 'between phases, after %d finished' % len(phases)
    if current is not None:
        partial = partial_phase(current['start'], current['rows'])
        if rounds > 1:
            partial['repeat'] = current['start']['round']
        phases.append(partial)
        where = 'in phase %s%s at %.1f s, after its interval %d' % (
            partial['name'], ' (round %d)' % current['start']['round'] if rounds > 1 else '',
            partial['seconds'], len(current['rows']))
    aborted = '%s: the journal %s ends %s (the driver was killed or lost)' % (
        CUT_SHORT, path, where)
    return run_result.build(head['manifest'], phases, aborted, repeat=rounds)


def partial_phase(start, rows):
    """A phase cut by the end of its journal, from the rows written before the cut."""
    kinds = stats.merge_counts(r.get('errors_by_kind') or {} for r in rows)
    timed_out = kinds.pop('timeout', 0)
    seconds = rows[-1]['t'] if rows else 0.0
    counts = _counts(rows, 'histogram', kinds, timed_out, seconds, service=any(
        r.get('service_histogram') for r in rows))
    op_counts = None
    if any(r.get('by_op') for r in rows):
        op_counts = dict((name, _op_counts(rows, name, kinds, timed_out, seconds))
                         for name in sorted(set(n for r in rows for n in r.get('by_op', {}))))
    res = PhaseResult(start['phase'], counts, op_counts)
    total = [r.get('syscalls') for r in rows]
    res['syscalls'] = {
        'source': None, 'by_name': {},
        'per_op': round(sum(total) / counts.attempted, 4) if rows and None not in total
        and counts.attempted else None,
        'reason': 'rebuilt from a journal, which keeps the total per interval only'}
    res['batching'] = {'source': None, 'requests_per_send': None, 'responses_per_recv': None}
    res['timeline'] = [with_rate(r) for r in rows]
    res['started_unix'] = start['started_unix']
    res['warnings'] = []
    res['notes'] = ['partial: cut short at %.1f s; rebuilt from the %d intervals its journal '
                    'holds (latency sums and CPU were not kept)' % (seconds, len(rows))]
    return res


def _counts(rows, key, kinds, timed_out, seconds, service=False):
    """The Counts of rows' counts and histograms (their sums estimated: not exact)."""
    hist = added(r.get(key) for r in rows)
    both = None
    if service:
        s_hist = added(r.get('service_histogram') for r in rows)
        both = (s_hist, estimated_sum(s_hist))
    return Counts(sum(r['attempted'] for r in rows), sum(r['ok'] for r in rows), kinds,
                  timed_out, seconds, hist, estimated_sum(hist), service=both, exact=False)


def _op_counts(rows, name, kinds, timed_out, seconds):
    """One op of a mix: the rows keep its errors' count, not their kinds; they are the
    phase's one kind where it had one, else ``unattributed``."""
    blocks = [r['by_op'][name] for r in rows if name in r.get('by_op', {})]
    errors_n = sum(b['errors'] for b in blocks)
    only = list(kinds) + (['timeout'] if timed_out else [])
    kind = only[0] if len(only) == 1 else 'unattributed'
    failed = {kind: errors_n} if errors_n and kind != 'timeout' else {}
    hist = added(b.get('histogram') for b in blocks)
    return Counts(sum(b['attempted'] for b in blocks), sum(b['ok'] for b in blocks), failed,
                  errors_n if kind == 'timeout' else 0, seconds, hist, estimated_sum(hist),
                  exact=False)


def estimated_sum(hist):
    """The sum of a histogram's values, each at the middle of its bucket (hdrh's mean
    recurses without end on 2.7)."""
    total = 0
    limit = min(hist.counts_len, hist.encoder.payload.counts_len)
    for base in range(0, limit, 1024):
        for offset, count in enumerate(hist.counts[base:min(base + 1024, limit)]):
            if count:
                value = hist.get_value_from_index(base + offset)
                total += (hist.get_lowest_equivalent_value(value) +
                          hist.get_highest_equivalent_value(value)) // 2 * count
    return total
