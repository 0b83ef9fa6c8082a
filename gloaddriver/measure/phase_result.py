"""One phase's result: recorded, merged and serialized here, and nowhere else.

``Counts`` is the exact state behind a counts block (every phase and every op of a
mix has one): the counts, the HdrHistogram of the successful ops and the exact sum
of their microseconds (under --rate also the service times beside them), the rates.
It is made three ways, and written one way (``to_json``):

- ``recorded``: from the runner's per-op stats (gloaddriver.measure.stats.OpStats);
- ``loaded``: from a counts block of a result file, with the exact fields it carries
  (``histogram``, ``latency_sum_us``, ``service_sum_us``);
- ``merged``: from the Counts of parts that ran side by side (``--processes``,
  ``--shard``, ``gloaddriver merge``): counts and sums add up, histograms are added,
  rates of parts that ran together add up.

``PhaseResult`` is a phase's JSON object itself (a dict: the runner and the backends
add sections by key at the end of a phase, ``json.dump`` writes it as it is). A
merge reads its parts' Counts back from their blocks, in a process of its own or
not, so that it gives the same from results in memory as from their files.
The JSON contract is report/result.schema.json (docs/result.md).
"""
from __future__ import absolute_import, division, print_function

from gloaddriver.measure import (client_bound, flamegraph, outages, script_figures, stats,
                                 syscalls, timeline)
from gloaddriver.measure.window import (CONNECTION_KEYS, LATE_AFTER, batching, client_load,
                                       per_op_us, syscall_block, text)

_MASK = (1 << 64) - 1


class Counts(object):
    """Counts, rates and latencies of one phase or of one op of a mix.

    ``hist``/``sum_us`` are what ``latency_us`` reports: under --rate from the
    intended start, with ``service`` = (hist, sum_us) from the actual start beside
    them; None otherwise. ``exact`` is False when a sum was estimated from an older
    file's rounded mean: then the sums are not written, and a later merge of this
    result estimates again rather than taking the estimate for a measurement.
    ``ops_rate``/``ok_rate`` are per second, unrounded where they were measured;
    ``ok`` is kept apart from the histogram's count (a bulk load counts rows as ok
    and times statements)."""

    __slots__ = ('attempted', 'ok', 'failed', 'timed_out', 'samples', 'origins', 'misses',
                 'seconds', 'ops_rate', 'ok_rate', 'hist', 'sum_us', 'service', 'checksum',
                 'exact')

    def __init__(self, attempted, ok, failed, timed_out, seconds, hist, sum_us,
                 samples=None, origins=None, misses=0, checksum=0, service=None,
                 rates=None, exact=True):
        self.attempted = attempted
        self.ok = ok
        self.failed = dict(failed)      # {error kind: count}, timeouts not among them
        self.timed_out = timed_out
        self.samples = dict(samples or {})
        self.origins = dict(origins or {})
        self.misses = misses
        self.seconds = seconds
        self.hist = hist
        self.sum_us = sum_us
        self.service = service
        self.checksum = checksum & _MASK
        self.exact = exact
        if rates is None:
            rates = (attempted / seconds, ok / seconds) if seconds > 0 else (None, None)
        self.ops_rate, self.ok_rate = rates

    @classmethod
    def recorded(cls, ops, seconds, open_loop=False):
        """From the per-op stats of a phase (all of them, or one op's)."""
        hist = _added([st.hist for st in ops])
        sum_us = sum(st.sum_us for st in ops)
        service = None
        ok = hist.get_total_count()
        if open_loop:
            service = (hist, sum_us)
            hist = _added([st.hist_co for st in ops])
            sum_us = sum(st.sum_co for st in ops)
        samples, origins = {}, {}
        for st in ops:
            for k, v in st.samples.items():
                samples.setdefault(k, v)
            for k, v in st.origins.items():
                origins.setdefault(k, v)
        return cls(sum(st.attempted for st in ops), ok,
                   stats.merge_counts(st.failed for st in ops),
                   sum(st.timed_out for st in ops), seconds, hist, sum_us, samples, origins,
                   sum(st.misses for st in ops), sum(st.checksum for st in ops), service)

    @classmethod
    def loaded(cls, block):
        """From a counts block as a result file has it."""
        hist, sum_us, exact = _loaded_latency(block, 'histogram', 'latency_us',
                                              'latency_sum_us')
        service = None
        if block.get('service_histogram'):
            s_hist, s_sum, s_exact = _loaded_latency(block, 'service_histogram',
                                                     'service_time_us', 'service_sum_us')
            service = (s_hist, s_sum)
            exact = exact and s_exact
        failed = dict(block['errors'])
        failed.pop('timeout', None)
        return cls(block['attempted'], block['ok'], failed, block['timed_out'],
                   block['seconds'], hist, sum_us, block.get('error_samples'),
                   block.get('error_origins'), block.get('misses', 0),
                   int(block.get('checksum') or '0', 16), service,
                   (block.get('ops_per_sec'), block.get('ok_per_sec')), exact)

    @classmethod
    def merged(cls, parts):
        """Of parts that ran side by side: their counts, sums and histograms add up,
        their rates too; the wall time is the longest part's."""
        hist = _added([p.hist for p in parts])
        service = None
        if all(p.service is not None for p in parts):
            service = (_added([p.service[0] for p in parts]),
                       sum(p.service[1] for p in parts))
        samples, origins = {}, {}
        for p in parts:
            for k, v in p.samples.items():
                samples.setdefault(k, v)
            for k, v in p.origins.items():
                origins.setdefault(k, v)
        return cls(sum(p.attempted for p in parts), sum(p.ok for p in parts),
                   stats.merge_counts(p.failed for p in parts),
                   sum(p.timed_out for p in parts), max(p.seconds for p in parts), hist,
                   sum(p.sum_us for p in parts), samples, origins,
                   sum(p.misses for p in parts), sum(p.checksum for p in parts), service,
                   (_sum_rates(p.ops_rate for p in parts), _sum_rates(p.ok_rate for p in parts)),
                   all(p.exact for p in parts))

    def to_json(self):
        """The counts block (schema: definitions/counts)."""
        errors = dict(self.failed)
        if self.timed_out:
            errors['timeout'] = self.timed_out
        out = {
            'attempted': self.attempted, 'ok': self.ok, 'failed': sum(self.failed.values()),
            'timed_out': self.timed_out, 'errors': errors, 'error_samples': dict(self.samples),
            'error_origins': dict(self.origins), 'misses': self.misses,
            'seconds': round(self.seconds, 4),
            'ops_per_sec': _rate(self.ops_rate), 'ok_per_sec': _rate(self.ok_rate),
            'latency_us': stats.latency_summary(self.hist, self.sum_us),
            'histogram': text(self.hist.encode()),
            'checksum': '%016x' % self.checksum,
        }
        if self.exact:
            out['latency_sum_us'] = int(self.sum_us)
        if self.service is not None:
            s_hist, s_sum = self.service
            out['service_time_us'] = stats.latency_summary(s_hist, s_sum)
            out['service_histogram'] = text(s_hist.encode())
            if self.exact:
                out['service_sum_us'] = int(s_sum)
        return out


def _added(hists):
    """One histogram of several; one alone is taken as it is (no Counts changes one)."""
    if len(hists) == 1:
        return hists[0]
    out = stats.new_histogram()
    for h in hists:
        out.add(h)
    return out


def _loaded_latency(block, hist_key, summary_key, sum_key):
    """(histogram, sum of microseconds, exact) of one latency of a counts block. A file
    written before ``latency_sum_us``/``service_sum_us`` has only the mean, rounded to
    0.1 us: the sum is taken as mean x the histogram's count (off by at most 0.05 us
    per op), and marked not exact."""
    encoded = block.get(hist_key)
    hist = stats.decode_histogram(encoded) if encoded else stats.new_histogram()
    if block.get(sum_key) is not None:
        return hist, block[sum_key], True
    mean = (block.get(summary_key) or {}).get('mean') or 0
    return hist, mean * hist.get_total_count(), False


def _sum_rates(rates):
    rates = [r for r in rates if r is not None]
    return sum(rates) if rates else None


def _rate(value):
    return round(value, 1) if value is not None else None


class PhaseResult(dict):
    """A phase's result block, written from its Counts (and ``op_counts``, per op of a
    mix) and its window; sections besides those are plain keys."""

    def __init__(self, name, counts, op_counts=None, cpu=None):
        dict.__init__(self, counts.to_json())
        self['name'] = name
        # The CPU seconds themselves (getrusage: microseconds) so that merges divide
        # exact sums; cpu_us_per_op is what readers show.
        self['cpu_seconds'] = round(cpu, 6) if cpu is not None else None
        self['cpu_us_per_op'] = per_op_us(cpu, counts.attempted) if cpu is not None else None
        if op_counts:
            self['ops'] = dict((k, c.to_json()) for k, c in op_counts.items())

    @classmethod
    def recorded(cls, name, ops, window, reason, rate=None, excluded=()):
        """From the per-op stats of a phase (the runner) and its measure.window.Window.

        ``rate`` is (target, arrival, latency_limit) of an open-loop phase: then
        latency_us/histogram are from the intended start (corrected for coordinated
        omission), service time kept apart. ``excluded`` names syscalls that are not
        the client's (a profiler's clock reads)."""
        open_loop = rate is not None
        per_op = dict((st.name, Counts.recorded([st], window.seconds, open_loop))
                      for st in ops) if len(ops) > 1 else None
        res = cls.measured(name, Counts.recorded(ops, window.seconds, open_loop), window,
                           reason, per_op, excluded)
        if open_loop:
            target, arrival, latency_limit = rate
            attempted, dropped = res['attempted'], sum(st.dropped for st in ops)
            res['rate'] = {
                'target': target, 'arrival': arrival,
                'achieved': round(attempted / window.seconds, 1) if window.seconds > 0
                else None,
                'late': sum(st.late for st in ops), 'late_after_ms': LATE_AFTER * 1000,
                'dropped': dropped, 'scheduled': attempted + dropped,
                'latency_limit_ms': latency_limit * 1000 if latency_limit else None,
            }
        if window.io:
            res['connection'] = dict((k, window.io[k]) for k in CONNECTION_KEYS
                                     if k in window.io)
        # Not judged here: the runner's Warnings listener calls judge() once every
        # section is in (the stages' moving target included).
        return res

    @classmethod
    def measured(cls, name, counts, window, reason, op_counts=None, excluded=(),
                 batching_block=None):
        """Counts measured over a window: with the window's CPU, client load, syscalls
        and batching (``batching_block`` when the backend knows its own). A backend
        that drives itself (the bulk loader) makes its phases here, adds its sections
        and calls ``judge()``."""
        res = cls(name, counts, op_counts, window.cpu)
        io = getattr(window, 'io', None)
        res['client'] = client_load(window)
        res['syscalls'] = syscall_block(window.syscalls, io, counts.attempted, reason,
                                        excluded)
        # The ops that were requests: one that raised in the client (client:*) sent
        # nothing, and would make the syscall count's requests per send a fiction.
        sent = counts.attempted - sum(n for kind, n in counts.failed.items()
                                      if kind.startswith('client:'))
        res['batching'] = batching_block or batching(window.syscalls, io, sent)
        wall0 = getattr(window, 'wall0', None)
        if wall0 is not None:
            res['started_unix'] = round(wall0, 3)
        return res

    def judge(self):
        """This phase's warnings (measure.client_bound), once its sections are in."""
        self['warnings'] = client_bound.phase_warnings(self)
        return self

    @classmethod
    def merged(cls, name, parts):
        """One phase from the same phase of parts that ran side by side: PhaseResults
        or blocks read from files (older ones too, see ``_loaded_latency``)."""
        counts = Counts.merged([_counts_of(p) for p in parts])
        op_counts = None
        if any('ops' in p for p in parts):
            names = sorted(set(k for p in parts for k in p.get('ops', {})))
            op_counts = dict((k, Counts.merged([_counts_of(p, k) for p in parts
                                                if k in p.get('ops', {})])) for k in names)
        res = cls(name, counts, op_counts, _cpu_of(parts))
        syscall_counts = stats.merge_counts((p['syscalls'].get('counts') or {}) for p in parts)
        block = syscalls.per_op(syscall_counts, counts.attempted) if syscall_counts else None
        res['syscalls'] = dict(block, source=parts[0]['syscalls'].get('source'),
                               counts=syscall_counts) if block else parts[0]['syscalls']
        res['batching'] = _weighted_batching(parts)
        if all(p.get('rate') for p in parts):
            res['rate'] = _merged_schedule(parts, counts)
        starts = [p.get('started_unix') for p in parts]
        if None not in starts:
            _over_the_span(res, parts, starts)
        if all(p.get('timeline') for p in parts):
            res['timeline'] = timeline.merge_concurrent([p['timeline'] for p in parts])
        if any('outages' in p for p in parts):
            res['outages'] = outages.merge_concurrent([p.get('outages') or [] for p in parts])
        if any(p.get('script') for p in parts):
            res['script'] = script_figures.merged([p.get('script') for p in parts])
        # Each process sampled itself: the client stacks add up.
        fg = flamegraph.merged([p.get('flamegraph') for p in parts])
        if fg:
            res['flamegraph'] = fg
        # One server, recorded by one part (run.processes gives it to the first).
        server_fg = [p['server_flamegraph'] for p in parts if p.get('server_flamegraph')]
        if server_fg:
            res['server_flamegraph'] = server_fg[0]
        # One server seen by every part: any part's samples are the server's.
        metrics = [p['server_metrics'] for p in parts if p.get('server_metrics')]
        if metrics:
            res['server_metrics'] = metrics[0]
        # An @abort threshold that stopped a part (a process judges its own share).
        broke = [p['threshold_abort'] for p in parts if p.get('threshold_abort')]
        if broke:
            res['threshold_abort'] = broke[0]
        # Each part ran in a process of its own: a part's warning is that process's.
        res['warnings'] = [w for p in parts for w in (p.get('warnings') or ())]
        loads = [p['client'] for p in parts if (p.get('client') or {}).get('busy') is not None]
        if loads:   # the busiest process: the one whose figures are most its own
            res['client'] = max(loads, key=lambda c: c['busy'])
        return res


def _over_the_span(res, parts, starts):
    """The merged phase's seconds and rates over the span its parts ran, first start to
    last end: parts that overlapped only in part are not counted as if side by side
    (their rates' sum)."""
    first = min(starts)
    span = round(max(s + p['seconds'] for s, p in zip(starts, parts)) - first, 4)
    res['started_unix'] = first
    if len(parts) < 2 or span <= 0:
        return
    res['seconds'] = span
    for block in [res] + list((res.get('ops') or {}).values()):
        block['ops_per_sec'] = _rate(block['attempted'] / span)
        block['ok_per_sec'] = _rate(block['ok'] / span)
    if res.get('rate'):
        res['rate']['achieved'] = _rate(res['attempted'] / span)


def _counts_of(part, op=None):
    """The Counts of a part (of one op of its mix), read from its block as written: a
    merge in the same process gives what a merge of the files gives."""
    return Counts.loaded(part if op is None else part['ops'][op])


def _cpu_of(parts):
    """The parts' CPU seconds added up; a file written before ``cpu_seconds`` gives
    cpu_us_per_op x attempted (rounded to 0.01 us per op); None if a part has neither."""
    total = 0
    for p in parts:
        if p.get('cpu_seconds') is not None:
            total += p['cpu_seconds']
        elif p.get('cpu_us_per_op') is not None:
            total += p['cpu_us_per_op'] * p['attempted'] / 1e6
        else:
            return None
    return total


def _merged_schedule(parts, counts):
    """--rate parts: the schedules add up."""
    first = parts[0]['rate']
    # rounded: shares of a rate (a third of it, each) add up to it, not a hair off
    rate = dict(first, target=round(sum(p['rate']['target'] for p in parts), 6),
                achieved=round(counts.attempted / counts.seconds, 1) if counts.seconds
                else None)
    for k in ('late', 'dropped', 'scheduled'):
        rate[k] = sum(p['rate'][k] for p in parts)
    return rate


def _weighted_batching(parts):
    att = sum(p['attempted'] for p in parts) or 1
    out = {'source': parts[0]['batching'].get('source')}
    for k in ('requests_per_send', 'responses_per_recv'):
        vals = [(p['batching'].get(k), p['attempted']) for p in parts]
        out[k] = round(sum(v * a for v, a in vals if v) / att, 2) \
            if all(v for v, _a in vals) else None
    return out
