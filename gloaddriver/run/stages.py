"""--stages: a phase's load ramps linearly through stages, k6 style.

``Plan`` is the ramp: the target, piecewise linear in time, from the starting target
through each stage's own. ``Ramp`` runs it in one phase:

* closed loop (targets in greenlets): the phase has as many workers as the ceiling
  (--greenlets, at least the highest target), and a ``Gate`` lets workers
  [0, allowed) run while the others park. A worker looks at the gate between ops, so
  it finishes the op it has in flight before it parks, and every op is accounted for.
  A driver greenlet moves ``allowed`` along the ramp every TICK;
* open loop (targets in ops/s): ``RampSchedule`` hands out intended start times whose
  rate follows the ramp exactly: the k-th start is where the ramp's integral reaches
  k + 1/2 (or, with Poisson arrivals, a Poisson process of rate 1 in that integral's
  time, which is a Poisson process of the ramp's rate in real time).

The loops below are the runner's hot loops with the gate (or the end of the plan)
added. A run without --stages keeps the runner's own loops, untouched, and never
imports this module. The loops get the runner's error path (``failed``) as an
argument, so this module does not import the runner.

The driver also ends the phase when the stages are over (as --duration would) and
notes the counts at each stage boundary, so each stage's counts, rates and mean active
greenlets are exact; its p99 comes from the timeline rows whose middle falls in it.

``Stages`` puts a Ramp in each phase as a listener of its moments (run.hooks).
"""
from __future__ import absolute_import, division, print_function

import math
from bisect import bisect_right
from collections import namedtuple
from functools import partial

import gevent
from gevent.event import Event

from gloaddriver.py23 import clock, spawn_named
from gloaddriver.measure import stats
from gloaddriver.measure.window import LATE_AFTER
from gloaddriver.run.hooks import Listener

TICK = 0.01    # how often the driver moves the gate: a target is at most this late
NAP = 0.05     # the longest sleep of an open-loop worker between looks at the budget

# The counts at a moment of the phase (the start, a stage boundary, the end).
Mark = namedtuple('Mark', 't attempted ok errors dropped area')


class Plan(object):
    """The ramp of a converters.Stages: ``points`` [(seconds into the phase, target)]
    joined by straight lines."""

    def __init__(self, stages):
        self.unit = stages.unit
        self.closed = stages.unit == 'greenlets'
        self.points = [(0.0, stages.start)]
        for s in stages.stages:
            self.points.append((self.points[-1][0] + s.seconds, s.target))
        self.total = self.points[-1][0]
        self.peak = max(v for _t, v in self.points)
        self._times = [t for t, _v in self.points]

    def segments(self):
        """[(start, end, target from, target to)], a stage each."""
        return [(a[0], b[0], a[1], b[1]) for a, b in zip(self.points, self.points[1:])]

    def stage_at(self, t):
        """The index of the stage running at ``t`` (the last one past the end)."""
        return min(max(bisect_right(self._times, t) - 1, 0), len(self.points) - 2)

    def target(self, t):
        if t >= self.total:
            return self.points[-1][1]
        i = self.stage_at(t)
        (t0, a), (t1, b) = self.points[i], self.points[i + 1]
        return a + (b - a) * (max(t, t0) - t0) / (t1 - t0)


class Gate(object):
    """Which workers of a closed loop may run: [0, allowed). ``active`` counts those not
    parked, and ``area`` its integral over time (for the mean)."""

    def __init__(self, workers, allowed, now):
        self.allowed = allowed
        self.active = workers          # each starts running; those above allowed park
        self.area = 0.0
        self.released = False
        self.stopped = None            # (clock, active) as the first worker saw the end
        self._since = now
        self._events = [Event() for _w in range(workers)]

    def _count(self, delta):
        now = clock()
        self.area += self.active * (now - self._since)
        self._since = now
        self.active += delta

    def area_at(self, now):
        return self.area + self.active * (now - self._since)

    def park(self, w):
        """Wait until worker ``w`` may run again (True), or the phase is over (False)."""
        event = self._events[w]
        event.clear()
        self._count(-1)
        event.wait()
        if self.released:
            return False
        self._count(1)
        return True

    def leave(self):
        """A running worker saw the phase end and returns."""
        if self.stopped is None:
            self.stopped = (clock(), self.active)
        self._count(-1)

    def allow(self, n):
        old, self.allowed = self.allowed, n
        for event in self._events[old:n]:
            event.set()

    def release(self):
        """The phase is over: wake every parked worker, to see that and return."""
        self.released = True
        for event in self._events:
            event.set()


class RampSchedule(object):
    """Intended start times of an open loop whose rate follows a Plan (in ops/s).

    The number of starts due by time t is N(t), the integral of the rate: quadratic
    within a stage. The k-th start is at N^-1(k + 1/2) (constant arrivals), or at
    N^-1 of a sum of k exponential draws (Poisson). take() returns None once the plan
    has no start left."""

    def __init__(self, plan, arrival, rng, start):
        self.start = start
        self.poisson = arrival == 'poisson'
        self.rng = rng
        self._segments = []            # (start, rate at start, slope, N at start, N at end)
        n = 0.0
        for t0, t1, a, b in plan.segments():
            d = t1 - t0
            n1 = n + (a + b) * d / 2.0
            self._segments.append((t0, a, (b - a) / d, n, n1))
            n = n1
        self._i = 0
        self._count = rng.expovariate(1.0) if self.poisson else 0.5

    def take(self):
        c = self._count
        segments = self._segments
        while self._i < len(segments) and c >= segments[self._i][4]:
            self._i += 1
        if self._i == len(segments):
            return None
        t0, a, k, n0, _n1 = segments[self._i]
        x = c - n0
        # a*u + k*u*u/2 = x, solved in the form that neither cancels nor divides by k.
        u = 2.0 * x / (a + math.sqrt(max(a * a + 2.0 * k * x, 0.0))) if x > 0 else 0.0
        self._count = c + (self.rng.expovariate(1.0) if self.poisson else 1.0)
        return self.start + t0 + u


def run_single(budget, st, fn, next_key, gate, w, failed, clock=clock):
    """run.runner._run_single, for worker ``w`` behind the gate."""
    while budget.left > 0:
        if w >= gate.allowed:
            if gate.park(w):
                continue
            return          # parked until the phase ended
        budget.left -= 1
        st.attempted += 1
        key = next_key()
        t0 = clock()
        try:
            r = fn(key)
        except Exception as e:  # every failure is counted by kind, none escapes
            failed(budget, st, e, t0)
            continue
        st.lat[int((clock() - t0) * 1000000.0)] += 1
        if not r and r is not None:
            st.misses += 1
    gate.leave()


def run_mix(budget, table, cumulative, rand, gate, w, failed, clock=clock):
    """run.runner._run_mix, for worker ``w`` behind the gate."""
    total = cumulative[-1]
    while budget.left > 0:
        if w >= gate.allowed:
            if gate.park(w):
                continue
            return
        budget.left -= 1
        st, fn, next_key = table[bisect_right(cumulative, rand() * total)]
        st.attempted += 1
        key = next_key()
        t0 = clock()
        try:
            r = fn(key)
        except Exception as e:
            failed(budget, st, e, t0)
            continue
        st.lat[int((clock() - t0) * 1000000.0)] += 1
        if not r and r is not None:
            st.misses += 1
    gate.leave()


def run_open(budget, pick, schedule, limit, over, failed, clock=clock):
    """run.runner._run_open on a RampSchedule: it may have no start left before the
    phase ends (a last stage down to 0), and a low rate can put the next start seconds
    away, so the wait is in naps that look at the budget."""
    sleep = gevent.sleep
    while budget.left > 0:
        intended = schedule.take()
        if intended is None:
            over.wait()
            break
        now = clock()
        if intended > now:
            wake = now
            while intended > wake and budget.left > 0:
                sleep(min(intended - wake, NAP))
                wake = clock()
            if budget.left <= 0:
                break
        st, fn, next_key = pick()
        if limit is not None and now - intended > limit:
            st.dropped += 1
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
            failed(budget, st, e, t0)
            continue
        t1 = clock()
        st.lat[int((t1 - t0) * 1000000.0)] += 1
        st.lat_co[int((t1 - intended) * 1000000.0)] += 1
        if not r and r is not None:
            st.misses += 1


class Ramp(object):
    """One phase's stages: the gate or the schedule, the driver, the per-stage figures.

    ``ops`` are the phase's OpStats, ``t0`` its start (clock), ``workers`` how many
    worker greenlets it has, ``failed`` the runner's error path for the loops."""

    def __init__(self, stages, budget, ops, t0, workers, failed):
        self.plan = Plan(stages)
        self.budget = budget
        self.ops = ops
        self.t0 = t0
        self.workers = workers
        self.failed = failed
        self.over = Event()
        self.gate = Gate(workers, self._allowed(0.0), t0) if self.plan.closed else None
        self.marks = [Mark(0.0, 0, 0, 0, 0, 0.0)]
        self._stop = None              # clock when the driver saw the phase end

    def _allowed(self, t):
        return min(int(self.plan.target(t) + 0.5), self.workers)

    def loops(self, w):
        """(open, single, mix): the loops of worker ``w``, called as the runner's are."""
        if self.gate is None:
            return partial(run_open, over=self.over, failed=self.failed), None, None
        return (None, partial(run_single, gate=self.gate, w=w, failed=self.failed),
                partial(run_mix, gate=self.gate, w=w, failed=self.failed))

    def schedule(self, _rate, arrival, rng, start):
        """In place of run.runner.Schedule (same arguments; the rate is the plan's). The
        stages' clock starts with the schedule's: the open loop's stats take some
        milliseconds to set up after the phase's window opened, and a boundary noted
        that much early would give a stage's last ops to the next one."""
        self.t0 = start
        return RampSchedule(self.plan, arrival, rng, start)

    def start(self):
        """Start the driver; it stops the budget when the stages are over."""
        return spawn_named('stages', self._drive)

    def _drive(self):
        budget, plan, gate = self.budget, self.plan, self.gate
        times = [t for t, _v in plan.points]
        try:
            while budget.left > 0:
                now = clock()
                t = now - self.t0
                # Interior boundaries only: the end's counts are taken after the workers
                # have finished the ops in flight (finish).
                while len(self.marks) < len(times) - 1 and t >= times[len(self.marks)]:
                    self.marks.append(self._mark(now))
                if t >= plan.total:
                    budget.stop('duration')
                    break
                if gate is not None:
                    gate.allow(self._allowed(t))
                gevent.sleep(max(min(TICK, times[len(self.marks)] - t), 0.0))
        finally:
            self._stop = clock()
            self.over.set()
            if gate is not None:
                gate.release()

    def _mark(self, now):
        ops = self.ops
        return Mark(now - self.t0, sum(st.attempted for st in ops), sum(st.ok for st in ops),
                    sum(st.failed_total + st.timed_out for st in ops),
                    sum(st.dropped for st in ops),
                    self.gate.area_at(now) if self.gate is not None else 0.0)

    def row_fields(self, now):
        """What a timeline row ending at ``now`` carries: ``target`` (greenlets, or ops/s)
        and in a closed loop ``active`` (workers not parked); after the phase's work
        stopped, as they were then."""
        t = now - self.t0
        gate = self.gate
        if gate is None:
            if self._stop is not None:
                t = min(t, self._stop - self.t0)
            return {'target': round(self.plan.target(t), 1)}
        active = gate.active
        if gate.stopped is not None:
            stop, active = gate.stopped
            t = min(t, stop - self.t0)
        return {'target': self._allowed(t), 'active': active}

    def finish(self, now, rows):
        """The phase's ``stages``: each stage's plan and what it achieved. ``now`` is the
        phase's end, after its workers returned; ``rows`` its timeline."""
        marks = self.marks + [self._mark(now)]
        by_stage = {}
        for r in rows:
            by_stage.setdefault(self.plan.stage_at(r['t'] - r['seconds'] / 2.0), []).append(r)
        out = []
        for i, (start, end, a, b) in enumerate(self.plan.segments()):
            stage = {'stage': i + 1, 'start': round(start, 3), 'end': round(end, 3),
                     'unit': self.plan.unit, 'target_from': a, 'target_to': b,
                     'seconds': 0.0, 'attempted': 0, 'ok': 0, 'errors': 0,
                     'ops_per_sec': None, 'p99_us': None, 'mean_target': None}
            if i + 1 < len(marks):
                m0, m1 = marks[i], marks[i + 1]
                seconds = m1.t - m0.t
                stage.update(seconds=round(seconds, 3), attempted=m1.attempted - m0.attempted,
                             ok=m1.ok - m0.ok, errors=m1.errors - m0.errors,
                             p99_us=_p99(by_stage.get(i) or _overlapping(rows, m0.t, m1.t)))
                # The mean of the straight line over the part of the stage that ran (all
                # of it, unless the phase ended early: --ops, an interrupt, an abort).
                part = min(max((m1.t - start) / (end - start), 0.0), 1.0)
                stage['mean_target'] = round(a + (b - a) * part / 2.0, 2)
                if seconds > 0:
                    stage['ops_per_sec'] = round(stage['attempted'] / seconds, 1)
                    if self.gate is not None:
                        stage['mean_active'] = round((m1.area - m0.area) / seconds, 2)
                if self.gate is None:
                    stage['achieved_rate'] = stage['ops_per_sec']
                    stage['dropped'] = m1.dropped - m0.dropped
            out.append(stage)
        return out


class Stages(Listener):
    """A Ramp for each phase: built as the window opens, it gives the phase its loops,
    its open loop's schedule and its end; at the end, the phase's ``stages``."""

    def __init__(self, stages, workers):
        self.stages = stages
        self.workers = workers
        self.ramp = None

    def opened(self, phase):
        ramp = self.ramp = Ramp(self.stages, phase.budget, phase.ops, phase.window.t0,
                                self.workers, phase.failed)
        phase.timeline.extra = ramp.row_fields
        phase.loops = ramp.loops
        phase.schedule = ramp.schedule
        phase.ender = ramp.start     # it ends the phase when the stages are over

    def end(self, phase, result):
        result['stages'] = self.ramp.finish(phase.window.t1, phase.rows)


def _overlapping(rows, t0, t1):
    """Rows that overlap [t0, t1]: a stage shorter than a row has no row of its own."""
    return [r for r in rows if r['t'] > t0 and r['t'] - r['seconds'] < t1]


def _p99(rows):
    hist = stats.new_histogram()
    for r in rows:
        if r.get('histogram'):
            hist.add(stats.decode_histogram(r['histogram']))
    return stats.values_at_percentiles(hist, [99.0])[0] if hist.get_total_count() else None
