"""The listeners a run's phases tell their moments to (run.hooks): each part that watches
a phase or adds to its result, adapted to the hooks here so that its own module stays
as it is.

``for_run`` puts them in their order; that order is the one thing to get right, and
the comments there say why.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver.measure.server_metrics import Poller
from gloaddriver.run import verify
from gloaddriver.run.hooks import Listener

SAMPLE_WAIT = 0.05   # of a period: how long the ticker waits for the server's figures


class Profiling(Listener):
    """The client profile (measure.profiler.Profiler) of each phase."""

    def __init__(self, profiler):
        self.profiler = profiler

    def opened(self, phase):
        # yappi's cpu clock reads the thread CPU time with a real clock_gettime
        # syscall per profiled call: the profiler's, not the client's.
        if self.profiler.clock == 'cpu':
            phase.excluded = tuple(phase.excluded) + ('clock_gettime',)
        self.profiler.start(phase.name)

    def closing(self, phase):
        self.profiler.stop()

    def end(self, phase, result):
        result['profile'] = self.profiler.save(phase.name)


class FlameGraphs(Listener):
    """--flamegraph / --server-flamegraph: a sampler per side (run.sampler), started
    just before the window opens and told to stop when the workers return; its files
    are written and its section added in ``end``, after the counters were read. The
    session gives it to the run last (``Run(listeners=...)``): the samplers start when
    every other part is ready and stop first."""

    def __init__(self, samplers):
        self.samplers = samplers   # {result key: sampler}

    def start(self, phase):
        for s in self.samplers.values():
            s.start(phase.name)

    def opened(self, phase):
        for s in self.samplers.values():
            s.opened()

    def closing(self, phase):
        for s in self.samplers.values():
            s.stop()

    def end(self, phase, result):
        for key, s in self.samplers.items():
            result[key] = s.save(phase.name)


class Faults(Listener):
    """--fault: the schedule starts with the first phase; each phase lists the actions
    taken in its window. ``on_return`` hears when the server came back."""

    def __init__(self, injector, on_return):
        self.injector = injector
        self.on_return = on_return

    def start(self, phase):
        self.injector.begin(self.on_return)     # the first phase's start; then a no-op

    def end(self, phase, result):
        result['faults'] = self.injector.in_window(phase.window.t0, phase.window.t1)


class ServerMetrics(Listener):
    """What the server saw: its CPU over the phase (sampled at the phase's edges,
    outside the window: the sampler's /proc reads are not the client's) and its figures
    each interval. The server is sampled beside the ticker (Poller) and waited for at
    most SAMPLE_WAIT of a period, so rows come on time whatever the server does."""

    def __init__(self, metrics, period):
        self.metrics = metrics
        self.period = period
        self._first = self._poller = self._prev = None
        self._intervals = []

    def start(self, phase):
        self._first = self.metrics.edge()
        self._intervals = []
        self._poller = self._prev = None

    def ticking(self, phase):
        self._poller = Poller(self.metrics, self.period)
        self._prev = self._poller.tick(self.period * SAMPLE_WAIT)

    def interval(self, phase, row, notes):
        cur = self._poller.tick(self.period * SAMPLE_WAIT)
        prev = self._prev
        if cur is not None and cur is not prev:
            d = self.metrics.delta(prev[1], cur[1], cur[0] - prev[0]) \
                if prev is not None else None
            self._prev = cur
        elif prev is not None:
            # No new sample since the last row: the server did not answer in time.
            d = {'rps': {}, 'counts': {}, 'late': True}
        else:
            d = None
        if d is not None:
            self._intervals.append(dict(d, t=row['t'], client_ops_per_sec=round(
                row['attempted'] / row['seconds'], 1) if row['seconds'] > 0 else None))
            notes['server_line'] = self.metrics.describe(d)
        notes['server'] = d

    def end(self, phase, result):
        if self._poller is not None:
            self._poller.stop()
        last = self.metrics.edge()
        result['server_metrics'] = {
            'phase': self.metrics.delta(self._first, last, phase.window.seconds),
            'intervals': self._intervals, 'error': self.metrics.error,
            'charts': self.metrics.charts}


class Live(Listener):
    """Live metrics out (report.live, the dashboard): each row as it closes, and each
    --find-max step once judged."""

    def __init__(self, sink):
        self.sink = sink
        self._sent_t = -1.0      # t of the last row sent

    def start(self, phase):
        self._sent_t = -1.0

    def interval(self, phase, row, notes):
        self.sink.interval(phase.name, row, phase.ops, notes['server'])
        self._sent_t = row['t']

    def end(self, phase, result):
        # The last, partial interval (and one the ticker closed but was stopped
        # before sending) go out too.
        for row in phase.rows:
            if row['t'] > self._sent_t:
                self.sink.interval(phase.name, row, phase.ops, None)

    def searched(self, find_max):
        self.sink.step(find_max)


class Progress(Listener):
    """A progress line per interval on ``out``."""

    def __init__(self, out):
        self.out = out

    def interval(self, phase, row, notes):
        watch = phase.budget.watch
        self.out.write(progress_line(phase.name, row, notes['server_line'],
                                     watch is not None and watch.active) + '\n')
        self.out.flush()


def progress_line(name, row, server_line='', outage=False):
    """The progress line of a timeline row: the one place its format is written (the
    docs' examples of it are checked against this, tests/unit/test_docs.py)."""
    n = row['attempted']
    sys_op = ('%.2f' % (row['syscalls'] / n)) if (row['syscalls'] is not None and n) else '-'
    p99 = row['latency_us']['p99'] or 0
    down = ' | OUTAGE' if outage else ''
    if 'target' in row:   # --stages
        down = (' | target %d, active %d' % (row['target'], row['active'])
                if 'active' in row else ' | target %s ops/s' % '{:,}'.format(
                    int(row['target']))) + down
    return ('%7.1fs %-7s %9s ops/s  p99 %7s us  errors %d  syscalls/op %s%s%s'
            % (row['t'], name, '{:,}'.format(int(n / row['seconds']))
               if row['seconds'] > 0 else '-', '{:,}'.format(p99), row['errors'], sys_op,
               server_line, down))


def checksummed(fn, st):
    """fn, plus an order-independent checksum of its results into st.checksum."""
    import zlib
    import msgpack
    # A bytea on 2.7 is psycopg2's buffer, which msgpack packs only as its bytes (3.x's
    # memoryview it packs itself, as the same bin).
    pack = msgpack.Packer(use_bin_type=True, default=_buffer_bytes).pack

    def op(key):
        r = fn(key)
        if r is not None and not isinstance(r, (int, list, tuple)):
            r = list(r)   # a connector's own response object
        st.checksum = (st.checksum + (zlib.crc32(pack(r)) & 0xffffffff)) % (1 << 64)
        return r
    return op


def _buffer_bytes(obj):
    if obj.__class__.__name__ in ('buffer', 'memoryview'):
        return bytes(obj)
    raise TypeError('cannot checksum a %s' % obj.__class__.__name__)


class Checksum(Listener):
    """--checksum: each op's results summed into its stats; the phase's ops only."""

    def ops(self, phase, worker, fns):
        by_name = dict((st.name, st) for st in phase.ops)
        return dict((k, checksummed(f, by_name[k])) for k, f in fns.items() if k in by_name)


class Ledger(Listener):
    """--verify: what the server acknowledged per key (measure.ledger.Ledger)."""

    def __init__(self, ledger):
        self.ledger = ledger

    def ops(self, phase, worker, fns):
        return self.ledger.track(fns, definite=verify.definite)


class Warnings(Listener):
    """The client-bound warnings, judged on the whole result (the stages' included:
    under --stages the target moves, and the schedule-lag judgement knows it)."""

    def end(self, phase, result):
        result.judge()


def for_run(config, profiler=None, faults=None, server_metrics=None, ledger=None, live=None,
            progress=None):
    """The run's listeners in their order. ``start``, ``opened``, ``ops``, ``ticking``
    and ``interval`` go first to last, ``closing`` and ``end`` last to first (run.hooks):

    - the profiler first: its files are written last, after every other section;
    - the fault schedule before the server's first sample, so it counts from the phase's
      start;
    - the server metrics before live and progress, which show its figures for the row;
    - checksums inside the ledger: the ledger sees what the op returned;
    - the warnings before the stages: their ``end`` comes after the stages' section.

    ``faults`` is (Injector, on_return); each part None when not asked for; checksums
    and the progress lines as the config says."""
    out = []
    if profiler is not None:
        out.append(Profiling(profiler))
    if faults is not None:
        out.append(Faults(*faults))
    if server_metrics is not None:
        out.append(ServerMetrics(server_metrics, config.output.interval))
    if config.load.checksum:
        out.append(Checksum())
    if ledger is not None:
        out.append(Ledger(ledger))
    out.append(Warnings())
    if config.load.stages:
        # Imported here: a run without --stages never loads it.
        from gloaddriver.run import stages
        out.append(stages.Stages(config.load.stages, config.load.greenlets))
    if live is not None:
        out.append(Live(live))
    if any(c['abort'] for c in config.output.fail_if or ()):
        # After the live outputs: the row that breaks a threshold still goes out.
        from gloaddriver.run.abort import AbortOnFail
        out.append(AbortOnFail(config.output.fail_if, config.output.abort_window,
                               config.output.abort_grace))
    if progress is not None and config.output.progress > 0:
        out.append(Progress(progress))
    return out
