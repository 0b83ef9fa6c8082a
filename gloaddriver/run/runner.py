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
from gloaddriver.measure.window import LATE_AFTER, Window
from gloaddriver.measure import stats, syscalls
from gloaddriver.measure.ledger import Ledger
from gloaddriver.measure.outages import OutageWatch
from gloaddriver.measure.phase_result import PhaseResult
from gloaddriver.measure.timeline import Timeline
from gloaddriver.run import hooks, processes, verify
from gloaddriver.run import listeners as _listeners
from gloaddriver.workload import keys as keygen
from gloaddriver.workload import keyspace

UNLIMITED = keyspace.UNLIMITED
NAP = 0.05    # the longest sleep of an open-loop worker between looks at the budget


# Every HUB_EVERY + 1 ops of a phase (all workers together), the running worker lets the
# hub run once. An op that never blocks (a workload file's pure-Python op) would
# otherwise keep the hub out for good: no timer, no ticker, no signal would ever run,
# and the phase would never end. For ops that block anyway it is one more switch in
# 256 ops.
HUB_EVERY = 255
yield_to_hub = gevent.sleep


class Budget(object):
    """Ops left in a phase; setting ``left`` to 0 stops every worker. ``watch`` is the
    phase's OutageWatch, which the error path tells of each failure; ``debug`` (--debug)
    is told of the first failure of each kind, with its traceback at hand; ``translate``
    is the backend's ``op_error``: a client library's exception as the OpError it means."""
    __slots__ = ('left', 'reason', 'watch', 'debug', 'translate')

    def __init__(self, left, watch=None, debug=None, translate=None):
        self.left = left
        self.reason = None
        self.watch = watch
        self.debug = debug
        self.translate = translate

    def stop(self, reason):
        self.left = 0
        if self.reason is None:
            self.reason = reason


def _failed(budget, st, exc, t0=None):
    """The error path of one op (kept out of the hot loop); t0: when the op began."""
    if budget.translate is not None and not isinstance(exc, errors.OpError):
        exc = budget.translate(exc)
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


def _run_single(budget, st, fn, next_key, clock=clock):
    """The hot loop of a one-op phase: keep it lean, it runs once per op."""
    while budget.left > 0:
        budget.left -= 1
        if not budget.left & HUB_EVERY:
            yield_to_hub()
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
        # Freed now, not when the next op's result replaces it: a result held across the
        # next op (large ones: rows) is freed out of the caches, at a cost of its own.
        r = None


def _run_mix(budget, table, cumulative, rand, clock=clock):
    """The hot loop of a weighted mix phase."""
    total = cumulative[-1]
    while budget.left > 0:
        budget.left -= 1
        if not budget.left & HUB_EVERY:
            yield_to_hub()
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
        r = None


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
            # In naps that look at the budget: each worker holds a start up to
            # greenlets/rate ahead, and a phase that ends (--duration, a --find-max step)
            # would otherwise stay open until the last of them, stretching its window.
            while intended > now and budget.left > 0:
                sleep(min(intended - now, NAP))
                now = clock()
            if budget.left <= 0:
                break
        st, fn, next_key = pick()
        if limit is not None and now - intended > limit:
            st.dropped += 1     # too far behind to be worth sending (pgbench -R -L)
            continue
        budget.left -= 1
        if not budget.left & HUB_EVERY:
            yield_to_hub()
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
        r = None


def _picker(table, cumulative, rand):
    """pick() -> (stats, op, next_key) for the open loop: fixed, or weighted."""
    if len(table) == 1:
        only = table[0]
        return lambda: only
    acc = cumulative[-1]
    return lambda: table[bisect_right(cumulative, rand() * acc)]


class Run(object):
    """The phases of one run through one backend (gloaddriver.backends.base.Backend).

    What watches a phase or adds to its result (the profiler, the server's metrics,
    live outputs, the fault schedule, the --verify ledger, the stages) is a listener of
    the phase's moments (run.hooks, run.listeners); ``listeners`` adds more."""

    def __init__(self, config, backend, counter, progress_out=None, profiler=None,
                 server_metrics=None, live=None, faults=None, listeners=()):
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
        self.keys = keyspace.KeySpace(config.load, user_workload=self.user is not None)
        self.faults = faults     # run.faults.Injector of --fault, or None
        # --verify: what the server acknowledged per key, and what reading it back found.
        self.ledger = Ledger() if config.load.verify else None
        self.verified = None
        self.perf = syscalls.PerfControl()
        self.progress_out = progress_out if progress_out is not None else sys.stderr
        self.hooks = hooks.Hooks(_listeners.for_run(
            config, profiler=profiler, server_metrics=server_metrics, live=live,
            faults=(faults, self.server_returned) if faults is not None else None,
            ledger=self.ledger, progress=self.progress_out) + list(listeners))
        self.phases = []
        self.aborted = None
        # --find-max: a run.find_max.Search that runs the last phase as its steps.
        self.search = None
        if config.load.find_max is not None:
            from gloaddriver.run.find_max import Search
            self.search = Search(config.load.find_max, config.load.greenlets)
        self._budget = None      # the phase (or warmup) running now
        self._watch = None       # the OutageWatch of the phase running now

    # -- phases ---------------------------------------------------------------

    def setup(self):
        """A workload file's setup(db), before the start (and the start barrier of
        --processes: each process runs it, on its own connection), then each worker's
        on_start(db, worker)."""
        self._hook('setup')
        self._each_worker('on_start')

    def execute(self, repeat=None):
        """The phases, once; ``repeat`` = (i, n) under --repeat N: the warmup goes before
        the first round only, --verify and the workload file's on_stop and teardown
        after the last (or one that was aborted), and each phase is marked with its round."""
        i, n = repeat or (1, 1)
        if n > 1:
            self.keys.new_round(i)    # fresh keys: each round begins where the first did
        if self.load.warmup > 0 and i == 1:
            self._warmup()
        start = len(self.phases)
        last = len(self.load.phases) - 1
        for index, spec in enumerate(self.load.phases):
            try:
                if self.search is not None and index == last:
                    # appends each step's phase; a child of --processes measures the
                    # steps its parent orders
                    orders = processes.step_orders()
                    if orders is not None:
                        self.search.follow(self, index, spec, orders)
                    else:
                        self.search.run(self, index, spec)
                else:
                    self.phases.append(self._run_phase(index, spec))
            except errors.OpError as e:
                # The server or network failed where no op could count it (a phase's
                # setup): the phases that ran are kept and written, the run is aborted
                # (the verdict says why).
                self.aborted = 'phase %s could not run: %s' % (spec.name, e)
            if self.aborted:
                break
        if n > 1:
            for p in self.phases[start:]:
                p['repeat'] = i
        if i < n and not self.aborted:
            return self.phases
        if self.ledger is not None and self.aborted != errors.INTERRUPTED:
            if self.faults is not None:
                self.faults.wait()     # read back once the server is as the schedule left it
            self.verified = verify.read_back(self.ledger, self.backend)
        for hook, name in ((self._each_worker, 'on_stop'), (self._hook, 'teardown')):
            try:
                hook(name)
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

    def _each_worker(self, name):
        """A workload file's on_start(db, worker) or on_stop(db, worker): every worker's at
        once (as Locust's users start), each on its own client; the first failure raises."""
        fn = getattr(self.user, name, None)
        if fn is None:
            return
        # The worker's number in the whole run, as pgbench's client_id (shards of one size).
        first = self.load.shard[0] * self.load.greenlets if self.load.shard else 0
        calls = [spawn_named('%s-%d' % (name, w), _caught, fn, self.backend.client(w),
                             first + w) for w in range(self.load.greenlets)]
        gevent.joinall(calls)
        for w, call in enumerate(calls):
            e = call.value
            if e is not None:
                raise errors.SetupError('workload file %s: %s(db, %d) failed: %s: %s'
                                        % (self.user.path, name, first + w,
                                           e.__class__.__name__, e))

    def _warmup(self):
        """Unrecorded selects so the hub, connections and caches are warm."""
        cfg = self.load
        budget = self._budget = Budget(UNLIMITED, translate=self.backend.op_error)
        st = stats.OpStats('warmup')
        workers = []
        for w in range(cfg.greenlets):
            ops = self.worker_ops(w)
            # select where there is one; otherwise the first op of the first phase
            fn = ops.get('select') or ops[cfg.phases[0].weights[0][0]]
            workers.append(spawn_named('warmup-%d' % w, _run_single, budget, st, fn,
                                       self.keys.warmup_source(w)))
        gevent.sleep(cfg.warmup)
        budget.stop('warmup over')
        gevent.joinall(workers)

    def run_phase(self, index, spec, rate, seconds, keys):
        """One phase as an open loop at ``rate`` ops/s for ``seconds`` on ``keys`` (a
        PhaseKeys kept from one call to the next): a step of --find-max."""
        base = self.load
        self.load = base._replace(rate=rate, duration=seconds)
        try:
            return self._run_phase(index, spec, keys)
        finally:
            self.load = base

    def warm(self, spec, keys, rate, seconds):
        """Unrecorded open-loop load of ``spec`` at ``rate`` for ``seconds``, told to no
        listener: a --find-max step's warm-up, so the server's queue left by the step
        before and the connections settle outside the measured window."""
        cfg = self.load
        budget = self._budget = Budget(UNLIMITED, translate=self.backend.op_error)
        ops = [stats.OpStats(name) for name, _w in spec.weights]
        for st in ops:
            st.open_loop()
        schedule = Schedule(rate, cfg.arrival, keygen.make_rng(cfg.seed, spec.name, 'warm',
                                                               rate), clock())
        cumulative, acc = [], 0
        for _name, weight in spec.weights:
            acc += weight
            cumulative.append(acc)
        workers = []
        for w in range(cfg.greenlets):
            fns = self.worker_ops(w, spec.name)
            table = [(st, fns[st.name], keys.source(st.name, w)) for st in ops]
            rand = keygen.make_rng(cfg.seed, spec.name, 'warm-mix', w).random
            workers.append(spawn_named('warm-%d' % w, _run_open, budget,
                                       _picker(table, cumulative, rand), schedule, None))
        timer = gevent.spawn_later(seconds, budget.stop, 'warm-up over')
        gevent.joinall(workers)
        timer.kill()

    def say(self, line):
        """A line on the progress stream (stderr), unless --progress 0."""
        if self.output.progress > 0:
            self.progress_out.write(line + '\n')
            self.progress_out.flush()

    def _run_phase(self, index, spec, keys=None):
        """One phase's story; the listeners are told each moment (run.hooks)."""
        cfg = self.load
        ops = [stats.OpStats(name) for name, _w in spec.weights]
        keys = keys if keys is not None else self.keys.phase(spec)
        budget = self._budget = Budget(self.keys.limit(spec), debug=show_traceback
                                       if self.output.debug else None,
                                       translate=self.backend.op_error)
        phase = self._phase(index, spec, ops, budget)
        self.backend.phase_started()
        self.hooks.start(phase)          # outside the window: not the client's figures
        window = self._open_window(phase)
        workers = self._spawn_workers(phase, keys)
        timer = phase.ender()
        ticker = spawn_named('ticker', self._tick, phase)
        budget.watch.watch_stalls(lambda: _recent_p99(phase.timeline), open_loop=bool(cfg.rate))
        gevent.joinall(workers)
        outages = self._close_window(phase, ticker, timer)
        rows = phase.rows = phase.timeline.finish(window.t1, window.sys1)   # the last latencies
        for st in ops:
            st.check()
        if budget.reason not in (None, 'duration'):
            self.aborted = budget.reason
        result = PhaseResult.recorded(
            spec.name, ops, window, self.counter.reason,
            (cfg.rate, cfg.arrival, cfg.latency_limit) if cfg.rate else None, phase.excluded)
        result['timeline'] = rows
        result['outages'] = outages
        result['keys'] = keys.covered()
        if window.sys0 is not None:
            result['syscalls']['self_reads'] = self.counter.self_reads(window.sys0, window.sys1)
        result.update(self.backend.phase_extra())
        self.hooks.end(phase, result)    # each listener's section; files written last
        return result

    def _open_window(self, phase):
        """Open the measured window: counters first, then what is measured with the phase
        (the outage watch, the listeners' opened: the profiler starts inside it)."""
        self.perf.enable()
        window = phase.window = Window(self.counter, self.backend.io_counts).open()
        phase.timeline = Timeline(phase.ops, self.counter, window.t0, window.sys0)
        phase.budget.watch = self._watch = OutageWatch(
            phase.ops, window.t0, self.timeout, self.backend.reconnects,
            self._say_outage(phase.name, window.t0) if self.output.progress > 0 else None,
            self.backend.member)
        self.hooks.opened(phase)         # the profiler starts, the stages set up
        return window

    def _close_window(self, phase, ticker, timer):
        """The workers returned: the listeners' closing (the profiler stops before the
        counters are read), the window closes, then what ran beside the workers stops.
        Returns the phase's outages."""
        self.hooks.closing(phase)
        phase.window.close()
        self.perf.disable()
        outages = phase.budget.watch.finish(phase.window.t1)
        self._watch = None
        ticker.kill()
        if timer is not None:
            timer.kill()
        return outages

    def _phase(self, index, spec, ops, budget):
        """The phase as listeners see it, with the runner's own loops, schedule and end
        (a listener may replace them as the window opens)."""
        phase = hooks.Phase(index, spec, ops, budget, _failed)
        duration = self.load.duration
        phase.loops = lambda _w: (_run_open, _run_single, _run_mix)
        phase.schedule = Schedule
        phase.ender = (lambda: spawn_named('duration', _end_at, phase.window.t0 + duration,
                                           budget)) if duration else (lambda: None)
        return phase

    def _spawn_workers(self, phase, keys):
        """The phase's worker greenlets, each in its loop: open (--rate), one op, or a mix."""
        cfg, spec, ops, budget = self.load, phase.spec, phase.ops, phase.budget
        schedule = None
        if cfg.rate:
            for st in ops:
                st.open_loop()
            schedule = phase.schedule(cfg.rate, cfg.arrival,
                                      keygen.make_rng(cfg.seed, spec.name, 'arrivals'), clock())
        workers = []
        for w in range(cfg.greenlets):
            run_open, run_single, run_mix = phase.loops(w)
            fns = self.hooks.ops(phase, w, self.worker_ops(w, spec.name))
            if schedule is None and len(ops) == 1:
                st = ops[0]
                loop, args = run_single, (budget, st, fns[st.name], keys.source(st.name, w))
            else:
                table = [(st, fns[st.name], keys.source(st.name, w)) for st in ops]
                cumulative, acc = [], 0
                for _name, weight in spec.weights:
                    acc += weight
                    cumulative.append(acc)
                rand = keygen.make_rng(cfg.seed, spec.name, 'mix', w).random
                if schedule is not None:
                    loop, args = run_open, (budget, _picker(table, cumulative, rand), schedule,
                                            cfg.latency_limit)
                else:
                    loop, args = run_mix, (budget, table, cumulative, rand)
            workers.append(spawn_named('worker-%d' % w, loop, *args))
        return workers

    def server_returned(self, when):
        """An injected fault brought the server back at clock time ``when``."""
        if self._watch is not None:
            self._watch.server_returned(when)

    def _say_outage(self, name, t0):
        def say(text):
            self.progress_out.write('%7.1fs %-7s %s\n' % (clock() - t0, name, text))
            self.progress_out.flush()
        return say

    # -- the ticker: timeline rows and the outage watchdog ----------------------

    def _tick(self, phase):
        """Each period: close a timeline row, watch for an outage, tell the listeners (the
        server's figures, live outputs, the progress line). On a fixed schedule: a late
        sample or a slow write does not push every later row back."""
        self.hooks.ticking(phase)
        period, budget = self.output.interval, phase.budget
        last_ok = next_at = clock()
        while True:
            next_at += period
            gevent.sleep(max(next_at - clock(), 0))
            now = clock()
            row = phase.timeline.close_interval(now, self.counter.snapshot())
            if row['ok']:
                last_ok = now
            elif row['errors'] and now - last_ok > self.outage_limit:
                budget.stop('no successful op for %.0f s (last error: %s); aborting the run'
                            % (now - last_ok, _last_sample(phase.ops)))
            self.hooks.interval(phase, row)


def _caught(fn, *args):
    """fn(*args) in a greenlet of its own: the exception it raised, or None (returned, so
    gevent prints no traceback of its own)."""
    try:
        fn(*args)
    except Exception as e:
        return e
    return None


def _end_at(deadline, budget):
    """Stop ``budget`` once the clock reads ``deadline``. One sleep is not enough: libev
    times it from the loop's cached time, which can lag the clock, and the phase would
    end a hair short of its --duration."""
    left = deadline - clock()
    while left > 0:
        gevent.sleep(left)
        left = deadline - clock()
    budget.stop('duration')


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
