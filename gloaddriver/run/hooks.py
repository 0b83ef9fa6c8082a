"""Phase lifecycle hooks: what a phase tells the parts that watch it or add to its result.

The runner tells each phase's moments to a run's listeners (``Hooks``): ``start``,
``opened``, ``ops``, ``ticking`` and ``interval`` in the order they were given,
``closing`` and ``end`` in the reverse order. It never calls the profiler, the
server's sampler, live outputs or the fault schedule by hand. A listener subclasses
``Listener`` and overrides only the moments it needs; each gets the ``Phase`` run:

``start(phase)``
    The phase is set up; its measured window is not open yet. Reads done here are
    not in the client's figures (the server's CPU from /proc, say).
``opened(phase)``
    The window is open and no worker has started: what starts here is measured with
    the phase (the profiler). A listener may replace the phase's ``loops``,
    ``schedule`` or ``ender`` here (the stages do).
``ops(phase, worker, fns) -> fns``
    A worker's {op name: fn(key)} before its loop starts; a listener may wrap them
    (checksums, the --verify ledger). Never called in the loop.
``ticking(phase)``
    The ticker starts, in its own greenlet, with the workers running.
``interval(phase, row, notes)``
    The ticker closed a timeline row. ``notes`` is one dict per row that listeners
    fill for the ones after them: ``server`` (the server's figures for the row, or
    None) and ``server_line`` (their text for a progress line).
``closing(phase)``
    The workers returned; the window is still open (the profiler stops here).
``end(phase, result)``
    The window is closed, its counters read, the result shaped: a listener adds its
    section as ``result['name'] = value``. What it writes to files goes here, after
    the counters were read, so that its I/O is not the phase's.
``searched(find_max)``
    --find-max judged a step (a phase of its own, ended): ``find_max`` is the search
    so far, as the result's ``find_max`` will have it, its outcome ``searching``.

A listener must not block in ``opened``, ``ticking``, ``interval`` or ``closing``
for long: the phase's workers and rows wait on it.
"""
from __future__ import absolute_import, division, print_function


class Phase(object):
    """One phase as its listeners see it.

    Set by the runner: ``index``, ``spec`` (workload.Phase), ``name``, ``ops`` (its
    OpStats), ``budget`` and ``failed`` (the error path the loops take); ``window``
    (measure.window.Window) and ``timeline`` once the window opened; ``rows`` (the
    whole timeline) at the end. A listener may set ``excluded`` (syscalls of its own,
    left out of the client's syscalls/op) and, in ``opened``, replace ``loops`` (worker
    -> (open, single, mix) loops), ``schedule`` (the open loop's start times, called as
    runner.Schedule) and ``ender`` (starts what ends the phase by time; returns a
    greenlet to kill at the end, or None)."""

    def __init__(self, index, spec, ops, budget, failed):
        self.index = index
        self.spec = spec
        self.name = spec.name
        self.ops = ops
        self.budget = budget
        self.failed = failed
        self.window = None
        self.timeline = None
        self.rows = None
        self.excluded = ()
        self.loops = None
        self.schedule = None
        self.ender = None


class Listener(object):
    """Every moment of a phase, doing nothing: override the ones you need."""

    def start(self, phase):
        pass

    def opened(self, phase):
        pass

    def ops(self, phase, worker, fns):
        return fns

    def ticking(self, phase):
        pass

    def interval(self, phase, row, notes):
        pass

    def closing(self, phase):
        pass

    def end(self, phase, result):
        pass

    def searched(self, find_max):
        pass


class Hooks(object):
    """A run's listeners, told each moment in order."""

    def __init__(self, listeners=()):
        self.listeners = [each for each in listeners if each is not None]

    def first(self, listener):
        """``listener`` told each moment before the others, and ``closing`` and ``end``
        after them (the journal: it writes what the others made)."""
        self.listeners.insert(0, listener)

    def start(self, phase):
        for each in self.listeners:
            each.start(phase)

    def opened(self, phase):
        for each in self.listeners:
            each.opened(phase)

    def ops(self, phase, worker, fns):
        for each in self.listeners:
            fns = each.ops(phase, worker, fns)
        return fns

    def ticking(self, phase):
        for each in self.listeners:
            each.ticking(phase)

    def interval(self, phase, row):
        notes = {'server': None, 'server_line': ''}
        for each in self.listeners:
            each.interval(phase, row, notes)

    # Last to first: the first to start is the last to end, as with nested blocks.

    def closing(self, phase):
        for each in reversed(self.listeners):
            each.closing(phase)

    def end(self, phase, result):
        for each in reversed(self.listeners):
            each.end(phase, result)

    def searched(self, find_max):
        for each in self.listeners:
            each.searched(find_max)
