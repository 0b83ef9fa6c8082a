"""pgbench's closing summary, from a gloaddriver result: the lines ``gloaddriver
pgbench`` prints before gloaddriver's own table, in pgbench 15's wording, order and
number formats, so that what reads pgbench's output reads this.

What the lines hold, and where gloaddriver's figures stand in for pgbench's:

* transactions: a script run is a transaction. "actually processed" counts the runs
  that succeeded; "failed" every other run (pgbench counts only serialization and
  deadlock failures, and stops a client at any other error; gloaddriver goes on and
  counts it). Percentages are of processed + failed + skipped, as pgbench's are. With
  -t, "X/Y" has Y = clients x -t, the transactions sent; transactions skipped under
  -R -L come on top of those (pgbench counts them within -t).
* ``latency average``: always the measured mean of the successful transactions.
  pgbench measures only under -P, -R or -L and otherwise prints the run's time
  times the clients over the transactions; that would be a second, coarser figure
  for the same thing (and it is never "including failures"). ``latency stddev`` is
  printed when pgbench prints it (-P, -R, -L), from the latency histogram
  (HdrHistogram, 3 significant digits), as is the count above -L's limit.
* ``initial connection time``: the manifest's ``connect_ms``; without it the line is
  left out, not guessed. ``rate limit schedule lag`` is left out: gloaddriver keeps
  the mean lag (latency less service time) but not its maximum.
* ``tps``: successful transactions over the phase's measured seconds (gloaddriver's
  ok/s), which never include connecting.
* Under several scripts, a block per script, as pgbench prints it; its lines of
  retries, failures by class and skipped transactions need counts the result does not
  split by script, so they are left out there (the totals above have them).
"""
from __future__ import absolute_import, division, print_function

import math
from collections import namedtuple

from gloaddriver import converters
from gloaddriver.measure import stats
from gloaddriver.workload.script.builtin import DESCRIPTIONS, NAMES

# One script of the run: its op name in the result, how pgbench names it (a file's path,
# or <builtin: ...>), its weight.
Script = namedtuple('Script', 'name label weight')
# What pgbench knows from its own flags and the result cannot say: the scripts in
# order, clients (-c) and threads (-j), -t per client or -T seconds, whether latencies
# were measured in full (-P, -R or -L), -R, -L in ms, --failures-detailed.
Settings = namedtuple('Settings', 'scripts clients threads transactions duration detailed '
                                  'rate latency_limit failures_detailed')


def builtin_label(name):
    """pgbench's "transaction type" of a built-in script."""
    return DESCRIPTIONS.get(name) or '<builtin: %s>' % name


def settings_of(result):
    """Settings from the result alone (its manifest's flags), for a result made by a
    plain run: its op names as the scripts, weight 1 each unless the phase says."""
    m = result['manifest']
    processes = m.get('processes') or 1
    clients = (m.get('greenlets') or 1) * processes
    phase = result['phases'][0]
    weights = ((m.get('phases') or [{}])[0].get('weights') or {})
    names = sorted(phase['ops']) if 'ops' in phase else [phase['name']]
    scripts = tuple(Script(n, builtin_label(n) if n in NAMES else n,
                           weights.get(n, 1))
                    for n in names)
    argv = list(m.get('argv') or ())
    duration = m.get('duration_per_phase') or None
    # The run's --ops (a merge's manifest has one process's share as ops_per_phase).
    ops = int(_value(argv, '--ops') or m.get('ops_per_phase') or 0)
    return Settings(scripts=scripts, clients=clients, threads=processes,
                    transactions=None if duration or not ops else ops // clients,
                    duration=duration,
                    detailed=_given(argv, '--rate') or _progress(argv) > 0,
                    rate=_given(argv, '--rate'),
                    latency_limit=_value(argv, '--latency-limit'), failures_detailed=False)


def _given(argv, flag):
    return any(a == flag or a.startswith(flag + '=') for a in argv)


def _value(argv, flag):
    """A flag's number in argv (the last given); None when absent or not a plain number
    (a unit such as 5s or 100k: then the manifest's own figure is used)."""
    found = converters.last_value(argv, flag)
    try:
        return None if found is None else float(found)
    except ValueError:
        return None


def _progress(argv):
    value = _value(argv, '--progress')
    return 1.0 if value is None else value


def _pct(part, whole):
    """pgbench's percentage: three decimals, NaN of nothing."""
    return '%.3f%%' % (100.0 * part / whole) if whole else 'NaN%'


def _walk(hist):
    """(lowest value, middle value, count) of each occupied slot of a histogram."""
    limit = min(hist.counts_len, hist.encoder.payload.counts_len)
    base = 0
    while base < limit:
        for offset, count in enumerate(hist.counts[base:min(base + 1024, limit)]):
            if count:
                value = hist.get_value_from_index(base + offset)
                low = hist.get_lowest_equivalent_value(value)
                high = hist.get_highest_equivalent_value(value)
                yield low, (low + high) / 2.0, count
        base += 1024


def _histogram(block):
    encoded = block.get('histogram')
    return stats.decode_histogram(encoded) if encoded else None


def stddev_us(block):
    """The standard deviation of a block's latencies (us), from its histogram around
    the exact mean; None without a histogram or latencies."""
    hist = _histogram(block)
    ok = block.get('ok') or 0
    if hist is None or not ok:
        return None
    mean = _mean_us(block)
    total = sum(c * (mid - mean) ** 2 for _low, mid, c in _walk(hist))
    return math.sqrt(total / hist.get_total_count()) if hist.get_total_count() else None


def late_count(block, limit_ms):
    """Successful transactions over ``limit_ms`` (by histogram slot: exact to its 3
    significant digits)."""
    hist = _histogram(block)
    if hist is None:
        return None
    limit_us = limit_ms * 1000.0
    return sum(c for low, _mid, c in _walk(hist) if low > limit_us)


def _mean_us(block):
    ok = block.get('ok') or 0
    if not ok:
        return 0.0
    if block.get('latency_sum_us') is not None:
        return block['latency_sum_us'] / float(ok)
    return float((block.get('latency_us') or {}).get('mean') or 0.0)


def _failed(block):
    return (block.get('failed') or 0) + (block.get('timed_out') or 0)


def lines(result, settings=None):
    """pgbench's summary lines of the result's first phase (a pgbench run is one);
    [] when no phase ran."""
    if not result.get('phases'):
        return []
    settings = settings or settings_of(result)
    phase = result['phases'][0]
    script = phase.get('script') or {}
    manifest = result.get('manifest') or {}
    skipped = ((phase.get('rate') or {}).get('dropped') or 0) if settings.rate else 0
    out = _header(phase, script, manifest, settings)
    out += _counts(phase, script, settings, skipped, '')
    out += _latency(phase, settings, '')
    if manifest.get('connect_ms') is not None:
        out.append('initial connection time = %.3f ms' % manifest['connect_ms'])
    seconds = phase.get('seconds') or 0.0
    out.append('tps = %f (without initial connection time)' % (
        phase.get('ok', 0) / seconds if seconds else 0.0))
    rows = script.get('statements')
    if len(settings.scripts) == 1:
        if rows is not None:
            out += _statements(rows, script, '')
    else:
        out += _per_script(phase, script, settings, rows, seconds)
    return out


def _header(phase, script, manifest, settings):
    if len(settings.scripts) == 1:
        kind = settings.scripts[0].label
    else:
        kind = 'multiple scripts'
    protocol = script.get('protocol') or ('prepared' if manifest.get('prepared') else 'simple')
    out = ['transaction type: %s' % kind,
           'scaling factor: %d' % (script.get('scale') or 1),
           'query mode: %s' % protocol,
           'number of clients: %d' % settings.clients,
           'number of threads: %d' % settings.threads]
    tries = script.get('max_tries', 1)
    if tries:    # pgbench leaves the line out when tries are unlimited (0)
        out.append('maximum number of tries: %d' % tries)
    if settings.duration:
        out.append('duration: %d s' % settings.duration)
    else:
        out.append('number of transactions per client: %d' % (settings.transactions or 0))
    processed = phase.get('ok', 0)
    if settings.duration:
        out.append('number of transactions actually processed: %d' % processed)
    else:
        out.append('number of transactions actually processed: %d/%d' % (
            processed, settings.clients * (settings.transactions or 0)))
    return out


def _counts(block, script, settings, skipped, lead):
    """failed, (by class), retried and retries, skipped, late: the lines between the
    transactions and the latency, for the whole run or (lead ' - ') one script."""
    failed = _failed(block)
    total = block.get('ok', 0) + failed + skipped
    out = ['%snumber of failed transactions: %d (%s)' % (lead, failed, _pct(failed, total))]
    failures = script.get('failures')
    if settings.failures_detailed and failures is not None and not lead:
        for kind in ('serialization', 'deadlock'):
            out.append('number of %s failures: %d (%s)' % (
                kind, failures.get(kind, 0), _pct(failures.get(kind, 0), total)))
    if script.get('max_tries', 1) != 1 and not lead:
        retried = script.get('retried', 0)
        out.append('number of transactions retried: %d (%s)' % (retried, _pct(retried, total)))
        out.append('total number of retries: %d' % script.get('retries', 0))
    if settings.rate and settings.latency_limit and not lead:
        out.append('number of transactions skipped: %d (%s)' % (skipped, _pct(skipped, total)))
    if settings.latency_limit and not lead:
        late = late_count(block, settings.latency_limit)
        if late is not None:
            ok = block.get('ok', 0)
            out.append('number of transactions above the %.1f ms latency limit: %d/%d (%s)'
                       % (settings.latency_limit, late, ok, _pct(late, ok)))
    return out


def _latency(block, settings, lead):
    """The latency lines: average always, stddev when pgbench gives it (always in a
    script's block)."""
    if not block.get('ok'):
        return []
    out = ['%slatency average = %.3f ms' % (lead, _mean_us(block) / 1000.0)]
    if settings.detailed or lead:
        dev = stddev_us(block)
        if dev is not None:
            out.append('%slatency stddev = %.3f ms' % (lead, dev / 1000.0))
    return out


def _statements(rows, script, lead):
    """The -r table: latency (ms), failures and, when retries are on, retries, then the
    command's first line, in pgbench's columns."""
    retries = script.get('max_tries', 1) != 1
    out = ['%sstatement latencies in milliseconds, failures and retries:' % lead if retries
           else '%sstatement latencies in milliseconds and failures:' % lead]
    for row in rows:
        mean = (row.get('latency_us') or {}).get('mean') if row.get('count') else None
        text = (row.get('command') or '').split('\n')[0]
        cells = '%14.3f%12d' % ((mean or 0.0) / 1000.0, row.get('failures', 0))
        if retries:
            cells += '%12d' % row.get('retries', 0)
        out.append('%s  %s' % (cells, text))
    return out


def _per_script(phase, script, settings, rows, seconds):
    """A block per script, as pgbench prints under several: its weight and share, its
    transactions and tps, failures, latency and (-r) its statements."""
    ops = phase.get('ops') or {}
    weights = sum(s.weight for s in settings.scripts)
    processed = phase.get('ok', 0)
    out = []
    for i, s in enumerate(settings.scripts, 1):
        block = ops.get(s.name) or {'ok': 0, 'failed': 0, 'timed_out': 0}
        ok = block.get('ok', 0)
        out.append('SQL script %d: %s' % (i, s.label))
        out.append(' - weight: %d (targets %.1f%% of total)' % (
            s.weight, 100.0 * s.weight / weights if weights else 0.0))
        out.append(' - %d transactions (%.1f%% of total, tps = %f)' % (
            ok, 100.0 * ok / processed if processed else 0.0, ok / seconds if seconds else 0.0))
        out += _counts(block, script, settings, 0, ' - ')
        out += _latency(block, settings, ' - ')
        if rows is not None:
            out += _statements([r for r in rows if r.get('script') == s.name], script, ' - ')
    return out
