"""Worker greenlets, phases, stop conditions and the per-interval ticker.

One ``Run`` object carries the config, the backend, the syscall counter and
the results; nothing lives in module globals. A phase hands out a budget of
ops; each worker takes one op from it before attempting it, so "attempted"
is counted before anything can fail, and every attempt ends as exactly one of
ok / failed (by kind) / timed out. The checks in ``OpStats.check`` prove it.
"""
from __future__ import absolute_import, division, print_function

import sys
from bisect import bisect_right

import gevent

from gloaddriver import errors
from gloaddriver.py23 import clock, spawn_named
from gloaddriver.measure import phase as shape
from gloaddriver.measure import stats, syscalls
from gloaddriver.measure.ledger import Ledger
from gloaddriver.measure.outages import OutageWatch
from gloaddriver.measure.phase_result import PhaseResult
from gloaddriver.run import verify
from gloaddriver.measure.server_metrics import Poller
from gloaddriver.measure.timeline import Timeline
from gloaddriver.workload import keys as keygen

UNLIMITED = sys.maxsize


class Budget(object):
    """Ops left in a phase; setting ``left`` to 0 stops every worker. ``watch`` is the
    phase's OutageWatch, which the error path tells of each failure; ``debug`` (--debug)
    is told of the first failure of each kind, with its traceback at hand."""
    __slots__ = ('left', 'reason', 'watch', 'debug')

    def __init__(self, left, watch=None, debug=None):
        self.left = left
        self.reason = None
        self.watch = watch
        self.debug = debug

    def stop(self, reason):
        self.left = 0
        if self.reason is None:
            self.reason = reason


def _failed(budget, st, exc, t0=None):
    """The error path of one op (kept out of the hot loop); t0: when the op began."""
    if budget.watch is not None:
        budget.watch.failed(exc, t0)
    if st.error(exc) and budget.debug is not None:
        budget.debug(st.name, exc)
    if isinstance(exc, errors.GaveUp):
        budget.stop(str(exc))
    # An op that fails without blocking (connection down) must still yield,
    # or its worker would spin and starve the ticker and everyone else.
    gevent.sleep(0)


def show_traceback(op, exc, out=None):
    """--debug: the traceback of the first failure of a kind, on stderr (only the
    first of each kind gets here: the hot path stays as it is)."""
    import traceback
    out = out or sys.stderr
    kind = getattr(exc, 'kind', None) or 'client:%s' % exc.__class__.__name__
    out.write('gloaddriver: debug: the first %s in op %s:\n%s' % (
        kind, op, ''.join(traceback.format_exception(type(exc), exc, stats.raised_at(exc)))))
    out.flush()


def _checksummed(fn, st):
    """fn, plus an order-independent checksum of its results into st.checksum."""
    import zlib
    import msgpack
    pack = msgpack.Packer(use_bin_type=True).pack

    def op(key):
        r = fn(key)
        if r is not None and not isinstance(r, (int, list, tuple)):
            r = list(r)   # a connector's own response object
        st.checksum = (st.checksum + (zlib.crc32(pack(r)) & 0xffffffff)) % (1 << 64)
        return r
    return op


def _run_single(budget, st, fn, next_key, clock=clock):
    """The hot loop of a one-op phase: keep it lean, it runs once per op."""
    while budget.left > 0:
        budget.left -= 1
        st.attempted += 1
        key = next_key()
        t0 = clock()
        try:
            r = fn(key)
        except Exception as e:  # every failure is counted by kind, none escapes
            _failed(budget, st, e, t0)
            continue
        st.lat[int((clock() - t0) * 1000000.0)] += 1
        if not r and r is not None:
            st.misses += 1


def _run_mix(budget, table, cumulative, rand, clock=clock):
    """The hot loop of a weighted mix phase."""
    total = cumulative[-1]
    while budget.left > 0:
        budget.left -= 1
        st, fn, next_key = table[bisect_right(cumulative, rand() * total)]
        st.attempted += 1
        key = next_key()
        t0 = clock()
        try:
            r = fn(key)
        except Exception as e:
            _failed(budget, st, e, t0)
            continue
        st.lat[int((clock() - t0) * 1000000.0)] += 1
        if not r and r is not None:
            st.misses += 1


class Schedule(object):
    """Intended start times for an open-loop phase: constant or Poisson arrivals."""

    def __init__(self, rate, arrival, rng, start):
        self.interval = 1.0 / rate
        self.rate = rate
        self.poisson = arrival == 'poisson'
        self.rng = rng
        self.next_at = start

    def take(self):
        t = self.next_at
        self.next_at = t + (self.rng.expovariate(self.rate) if self.poisson else self.interval)
        return t


LATE_AFTER = shape.LATE_AFTER
SAMPLE_WAIT = 0.05   # of a period: how long the ticker waits for the server's figures


def _run_open(budget, pick, schedule, limit, clock=clock):
    """Open loop (--rate): each free worker takes the next intended start time.

    When the server stalls, every worker is busy, the schedule runs ahead of
    them, and the ops started late carry that wait in their latency from the
    intended start: the coordinated-omission correction. Service time (from
    the actual start) is recorded too.
    """
    sleep = gevent.sleep
    while budget.left > 0:
        intended = schedule.take()
        now = clock()
        if intended > now:
            sleep(intended - now)
            if budget.left <= 0:
                break
        st, fn, next_key = pick()
        if limit is not None and now - intended > limit:
            st.dropped += 1     # too far behind to be worth sending (pgbench -R -L)
            continue
        budget.left -= 1
        st.attempted += 1
        key = next_key()
        t0 = clock()
        if t0 - intended > LATE_AFTER:
            st.late += 1
        try:
            r = fn(key)
        except Exception as e:
            _failed(budget, st, e, t0)
            continue
        t1 = clock()
        st.lat[int((t1 - t0) * 1000000.0)] += 1
        st.lat_co[int((t1 - intended) * 1000000.0)] += 1
        if not r and r is not None:
            st.misses += 1


class Run(object):
    """The phases of one run through one backend (gloaddriver.backends.base.Backend)."""

    def __init__(self, config, backend, counter, progress_out=None, profiler=None,
                 server_metrics=None, live=None, faults=None):
        self.load = config.load
        self.output = config.output
        self.outage_limit = config.limits.outage_limit
        self.timeout = config.limits.timeout
        self.user = None
        if config.load.workload_file:
            from gloaddriver.workload import userfile
            self.user = userfile.load(config.load.workload_file)
        self.backend = backend
        self.counter = counter
        self.profiler = profiler
        self.server_metrics = server_metrics
        # Live metrics out (report.live): each interval's row goes there as it closes.
        self.live = live
        self.faults = faults     # run.faults.Injector of --fault, or None
        # --verify: what the server acknowledged per key, and what reading it back found.
        self.ledger = Ledger() if config.load.verify else None
        self.verified = None
        self.perf = syscalls.PerfControl()
        self.progress_out = progress_out if progress_out is not None else sys.stderr
        self.phases = []
        self.aborted = None
        self._budget = None      # the phase (or warmup) running now
        self._watch = None       # the OutageWatch of the phase running now
        # Keys known to exist after a time-bounded insert phase, which grows the key
        # space with the run instead of wrapping around --keys; None: --keys.
        self.key_count = None
        self.key_first = 0

    # -- phases ---------------------------------------------------------------

    def setup(self):
        """A workload file's setup(db), before the start (and the start barrier of
        --processes: each process runs it, on its own connection)."""
        self._hook('setup')

    def execute(self):
        if self.load.warmup > 0:
            self._warmup()
        if self.faults is not None:
            self.faults.begin(self.server_returned)
        for index, spec in enumerate(self.load.phases):
            self.phases.append(self._run_phase(index, spec))
            if self.aborted:
                break
        if self.ledger is not None and self.aborted != errors.INTERRUPTED:
            if self.faults is not None:
                self.faults.wait()     # read back once the server is as the schedule left it
            self.verified = verify.read_back(self.ledger, self.backend)
        try:
            self._hook('teardown')
        except errors.SetupError as e:   # the phases ran: report them, and say this
            errors.say('note: %s' % e)
        return self.phases

    def interrupt(self):
        """Stop now, as if the phase's time were up, and run no later phase (SIGINT/SIGTERM)."""
        self.aborted = errors.INTERRUPTED
        if self._budget is not None:
            self._budget.stop(errors.INTERRUPTED)

    def worker_ops(self, worker, phase=''):
        """{op name: fn(key)} of one worker: the backend's, or a workload file's bound to
        the backend's client (its rnd drawn anew per shard and phase)."""
        if self.user is None:
            return self.backend.worker_ops(worker)
        rnd = keygen.make_rng(self.load.seed, 'workload-file', self.load.shard, phase, worker)
        return self.user.bind(self.backend.client(worker), rnd)

    def _hook(self, name):
        """A workload file's setup(db) or teardown(db), on worker 0's client."""
        fn = getattr(self.user, name, None)
        if fn is None:
            return
        try:
            fn(self.backend.client(0))
        except Exception as e:
            raise errors.SetupError('workload file %s: %s(db) failed: %s: %s'
                                    % (self.user.path, name, e.__class__.__name__, e))

    def _warmup(self):
        """Unrecorded selects so the hub, connections and caches are warm."""
        cfg = self.load
        budget = self._budget = Budget(UNLIMITED)
        st = stats.OpStats('warmup')
        workers = []
        for w in range(cfg.greenlets):
            ops = self.worker_ops(w)
            # select where there is one; otherwise the first op of the first phase
            fn = ops.get('select') or ops[cfg.phases[0].weights[0][0]]
            next_key = keygen.generator('uniform', cfg.keys, cfg.seed, 'warmup', w)
            workers.append(spawn_named('warmup-%d' % w, _run_single, budget, st, fn, next_key))
        gevent.sleep(cfg.warmup)
        budget.stop('warmup over')
        gevent.joinall(workers)

    def _shard_range(self):
        """(first key, number of keys) of this shard's part of [0, --keys), or of the keys
        a time-bounded insert phase made."""
        cfg = self.load
        lo, size = 0, cfg.keys
        if cfg.shard:
            i, n = cfg.shard
            lo, hi = i * cfg.keys // n, (i + 1) * cfg.keys // n
            size = max(hi - lo, 1)
        if self.key_count is not None:
            return self.key_first, max(self.key_count, 1)
        return lo, size

    def _time_bounded_insert(self, spec):
        """An insert phase of its own with no op limit: it takes fresh keys for as long as
        it runs, and the phases after it work on the keys it made."""
        return self.load.ops == 0 and spec.name != 'load' and len(spec.weights) == 1 and \
            spec.weights[0][0] == 'insert' and self.user is None

    def _key_source(self, spec, op, worker, shared):
        cfg = self.load
        lo, size = self._shard_range()
        if 'insert' in dict(spec.weights) and 'insert' not in shared:
            # Inserts always take fresh sequential keys: in a phase of their
            # own, this shard's keys from its first (the load); in a mix,
            # keys above the key space, a separate range per shard.
            if len(spec.weights) > 1:
                start = cfg.keys + (cfg.shard[0] << 40 if cfg.shard else 0)
                shared['insert'] = keygen.sequential(UNLIMITED, start)
            elif self._time_bounded_insert(spec):
                # Growing without bound: each shard from a range of its own, 2**40 apart,
                # or one shard's keys would run into the next one's.
                shared['insert'] = keygen.sequential(
                    UNLIMITED, cfg.shard[0] << 40 if cfg.shard else 0)
            else:
                shared['insert'] = keygen.sequential(size, lo)
        if op == 'insert':
            return shared['insert']
        if cfg.distribution == 'sequential' and 'seq' not in shared:
            shared['seq'] = keygen.sequential(size, lo)
        return keygen.generator(cfg.distribution, size, cfg.seed, spec.name, worker, start=lo,
                                shared=shared.get('seq'), inserts=shared.get('insert'))

    def _picker(self, spec, ops, fns, worker, shared):
        """pick() -> (stats, op, next_key) for the open loop: fixed, or weighted."""
        table = [(st, fns[st.name], self._key_source(spec, st.name, worker, shared))
                 for st in ops]
        if len(table) == 1:
            only = table[0]
            return lambda: only
        cumulative, acc = [], 0
        for _name, weight in spec.weights:
            acc += weight
            cumulative.append(acc)
        rand = keygen.make_rng(self.load.seed, spec.name, 'mix', worker).random
        return lambda: table[bisect_right(cumulative, rand() * acc)]

    def _run_phase(self, index, spec):
        cfg = self.load
        ops = [stats.OpStats(name) for name, _w in spec.weights]
        # A load phase inserts the whole key space once; others run --ops. Without an
        # op limit a sequential delete phase ends when it has deleted every key there is.
        lo, size = self._shard_range()
        if spec.name == 'load' or (cfg.ops == 0 and spec.weights == (('delete', 1),) and
                                   cfg.distribution == 'sequential'):
            limit = size
        else:
            limit = cfg.ops or UNLIMITED
        budget = self._budget = Budget(limit, debug=show_traceback if self.output.debug
                                       else None)
        self._live_t = -1.0      # t of the last timeline row sent live
        shared = {}
        workers = []
        self.backend.phase_started()
        # Outside the measured window: the sampler's /proc reads are not the client's.
        server0 = self.server_metrics.sample(cpu=True) if self.server_metrics else None
        intervals = []
        self.perf.enable()
        window = shape.Window(self.counter, self.backend.io_counts).open()
        timeline = Timeline(ops, self.counter, window.t0, window.sys0)
        budget.watch = self._watch = OutageWatch(
            ops, window.t0, self.timeout, self.backend.reconnects,
            self._say_outage(spec.name, window.t0) if self.output.progress > 0 else None)
        if self.profiler is not None:
            self.profiler.start(spec.name)
        ramp = None
        if cfg.stages:
            # Imported here: a run without --stages never loads it, and keeps the loops above.
            from gloaddriver.run import stages as staging
            ramp = staging.Ramp(cfg.stages, budget, ops, window.t0, cfg.greenlets, _failed)
            timeline.extra = ramp.row_fields
        schedule = None
        if cfg.rate:
            for st in ops:
                st.open_loop()
            schedule = (Schedule if ramp is None else ramp.schedule)(
                cfg.rate, cfg.arrival, keygen.make_rng(cfg.seed, spec.name, 'arrivals'), clock())
        for w in range(cfg.greenlets):
            run_open, run_single, run_mix = (_run_open, _run_single, _run_mix) if ramp is None \
                else ramp.loops(w)
            fns = self.worker_ops(w, spec.name)
            if cfg.checksum:
                by_name = dict((st.name, st) for st in ops)
                fns = dict((k, _checksummed(f, by_name[k])) for k, f in fns.items()
                           if k in by_name)
            if self.ledger is not None:
                fns = self.ledger.track(fns, definite=verify.definite)
            if schedule is not None:
                workers.append(spawn_named('worker-%d' % w, run_open, budget,
                                           self._picker(spec, ops, fns, w, shared), schedule,
                                           cfg.latency_limit))
            elif len(ops) == 1:
                st = ops[0]
                workers.append(spawn_named('worker-%d' % w, run_single, budget, st, fns[st.name],
                                           self._key_source(spec, st.name, w, shared)))
            else:
                table, cumulative, acc = [], [], 0
                for st, (name, weight) in zip(ops, spec.weights):
                    acc += weight
                    cumulative.append(acc)
                    table.append((st, fns[name], self._key_source(spec, name, w, shared)))
                rng = keygen.make_rng(cfg.seed, spec.name, 'mix', w)
                workers.append(spawn_named('worker-%d' % w, run_mix, budget, table, cumulative,
                                           rng.random))
        timer = gevent.spawn_later(cfg.duration, budget.stop, 'duration') if cfg.duration else None
        if ramp is not None:
            timer = ramp.start()     # it ends the phase when the stages are over
        ticker = spawn_named('ticker', self._tick, spec.name, ops, budget, timeline, intervals)
        budget.watch.watch_stalls(lambda: _recent_p99(timeline), open_loop=bool(cfg.rate))
        gevent.joinall(workers)
        if self.profiler is not None:
            self.profiler.stop()
        window.close()
        self.perf.disable()
        outages = budget.watch.finish(window.t1)
        self._watch = None
        ticker.kill()
        if timer is not None:
            timer.kill()
        rows = timeline.finish(window.t1, window.sys1)   # drains the last latencies
        if self.live is not None:
            # The last, partial interval (and one the ticker closed but was stopped
            # before sending) go out too.
            for row in rows:
                if row['t'] > self._live_t:
                    self.live.interval(spec.name, row, ops, None)
        for st in ops:
            st.check()
        if budget.reason not in (None, 'duration'):
            self.aborted = budget.reason
        # yappi's cpu clock reads the thread CPU time with a real clock_gettime
        # syscall per profiled call: the profiler's, not the client's.
        excluded = ('clock_gettime',) if (self.profiler is not None and
                                          self.profiler.clock == 'cpu') else ()
        result = PhaseResult.recorded(
            spec.name, ops, window, self.counter.reason,
            (cfg.rate, cfg.arrival, cfg.latency_limit) if cfg.rate else None, excluded)
        result['timeline'] = rows
        if ramp is not None:
            result['stages'] = ramp.finish(window.t1, rows)
        result['outages'] = outages
        if self.faults is not None:
            result['faults'] = self.faults.in_window(window.t0, window.t1)
        result['keys'] = self._keys_covered(spec, shared, lo, size)
        if window.sys0 is not None:
            result['syscalls']['self_reads'] = self.counter.self_reads(window.sys0, window.sys1)
        if self.server_metrics is not None:
            server1 = self.server_metrics.sample(cpu=True)
            result['server_metrics'] = {
                'phase': self.server_metrics.delta(server0, server1, window.seconds),
                'intervals': intervals, 'error': self.server_metrics.error,
                'charts': self.server_metrics.charts}
        result.update(self.backend.phase_extra())
        if self.profiler is not None:
            # Files are written after the counters were read: their I/O is
            # not the phase's.
            result['profile'] = self.profiler.save(spec.name)
        return result

    def server_returned(self, when):
        """An injected fault brought the server back at clock time ``when``."""
        if self._watch is not None:
            self._watch.server_returned(when)

    def _say_outage(self, name, t0):
        def say(text):
            self.progress_out.write('%7.1fs %-7s %s\n' % (clock() - t0, name, text))
            self.progress_out.flush()
        return say

    def _keys_covered(self, spec, shared, lo, size):
        """The key range a phase worked on, {'first', 'count'}; a time-bounded insert
        phase also sets the key space of the phases after it."""
        inserts = shared.get('insert')
        if inserts is not None and len(spec.weights) == 1:
            made = inserts.issued[0]
            if self._time_bounded_insert(spec):
                self.key_count, self.key_first = made, inserts.start
            else:
                made = min(made, size)
            return {'first': inserts.start, 'count': made}
        return {'first': lo, 'count': size}

    # -- the ticker: progress lines and the outage watchdog ----------------------

    def _tick(self, name, ops, budget, timeline, intervals):
        metrics = self.server_metrics
        poller = Poller(metrics, self.output.interval) if metrics is not None else None
        try:
            self._tick_loop(name, ops, budget, timeline, intervals, poller)
        finally:
            if poller is not None:
                poller.stop()

    def _tick_loop(self, name, ops, budget, timeline, intervals, poller):
        """Each period: close a timeline row, watch for an outage, pair the newest server
        sample with the previous one, write the progress line. The server is sampled
        beside the ticker (Poller) and waited for at most SAMPLE_WAIT of a period, so
        rows come on time whatever the server does."""
        out = self.output
        period = out.interval
        wait = period * SAMPLE_WAIT
        metrics = self.server_metrics
        prev_server = poller.tick(wait) if poller is not None else None
        last_ok = next_at = clock()
        while True:
            # On a fixed schedule: a late sample or a slow write does not push every
            # later row back.
            next_at += period
            gevent.sleep(max(next_at - clock(), 0))
            now = clock()
            row = timeline.close_interval(now, self.counter.snapshot())
            if row['ok']:
                last_ok = now
            elif row['errors'] and now - last_ok > self.outage_limit:
                budget.stop('no successful op for %.0f s (last error: %s); aborting the run'
                            % (now - last_ok, _last_sample(ops)))
            server_line = ''
            if poller is not None:
                cur = poller.tick(wait)
                if cur is not None and cur is not prev_server:
                    d = metrics.delta(prev_server[1], cur[1], cur[0] - prev_server[0]) \
                        if prev_server is not None else None
                    prev_server = cur
                elif prev_server is not None:
                    # No new sample since the last row: the server did not answer in time.
                    d = {'rps': {}, 'counts': {}, 'late': True}
                else:
                    d = None
                if d is not None:
                    intervals.append(dict(d, t=row['t'], client_ops_per_sec=round(
                        row['attempted'] / row['seconds'], 1) if row['seconds'] > 0 else None))
                    server_line = metrics.describe(d)
            if self.live is not None:
                self.live.interval(name, row, ops, d if poller is not None else None)
                self._live_t = row['t']
            if out.progress > 0:
                n = row['attempted']
                sys_op = ('%.2f' % (row['syscalls'] / n)) if (row['syscalls'] is not None and n) else '-'
                p99 = row['latency_us']['p99'] or 0
                down = ' | OUTAGE' if budget.watch is not None and budget.watch.active else ''
                if 'target' in row:   # --stages
                    down = (' | target %d, active %d' % (row['target'], row['active'])
                            if 'active' in row else ' | target %s ops/s' % '{:,}'.format(
                                int(row['target']))) + down
                self.progress_out.write(
                    '%7.1fs %-7s %9s ops/s  p99 %7s us  errors %d  syscalls/op %s%s%s\n'
                    % (row['t'], name, '{:,}'.format(int(n / row['seconds'])) if row['seconds'] > 0
                       else '-', '{:,}'.format(p99), row['errors'], sys_op, server_line, down))
                self.progress_out.flush()


def _recent_p99(timeline):
    """The p99 of the last timeline row, in seconds, or None before the first."""
    for row in reversed(timeline.rows):
        p99 = row['latency_us'].get('p99')
        if p99:
            return p99 / 1e6
    return None


def _last_sample(ops):
    for st in ops:
        for v in st.samples.values():
            return v
    return 'none'
