"""--journal FILE: the run written down as it goes, so that a driver killed at any moment
(SIGKILL, the OOM killer, a lost container) loses at most the interval in progress.

One JSON object a line, each appended and flushed as it happens (``gloaddriver report
JOURNAL`` rebuilds the result from them, measure.rebuild):

- ``run``: first, the manifest, the rounds asked for (--repeat) and the interval;
- ``phase_start``: a phase's measured window opened (its round, its wall time);
- ``interval``: a timeline row, as the ticker closed it (counts and histograms);
- ``event``: an outage that began or ended, a fault the schedule took, a --find-max
  step judged;
- ``phase``: a finished phase's whole result, as ``--json`` holds it;
- ``end``: the run's own sections (aborted, verify, faults, find_max), last.

Everything is written by the ticker and the phase's edges (the hooks), never by the
workers: the hot loops stay as they are. The journal is the first listener of a
run's phases (``Hooks.first``), so that a row is in the file before its progress line
is printed, and a phase's result is written after every other listener added its
section.
"""
from __future__ import absolute_import, division, print_function

import io
import json

import gevent

from gloaddriver import errors
from gloaddriver.run.hooks import Listener

VERSION = 1


class Journal(Listener):
    """Appends the run's records to ``path``, one JSON object a line."""

    def __init__(self, path, rounds=1, interval=1.0, injector=None):
        self.path = path
        self.rounds = rounds
        self.period = interval
        self.injector = injector    # run.faults.Injector of --fault, or None
        self._file = None
        self._round = 0
        self._faults_told = 0
        self._outage = False
        self._pending = []          # finished phases not written yet

    def open(self, manifest):
        """The file, truncated, with the run's first record; a file that cannot be
        made is said and the run goes on without it (its path was checked before)."""
        try:
            self._file = io.open(self.path, 'w', encoding='utf-8', newline='\n')
        except (IOError, OSError) as e:
            errors.say('--journal %s was not written: %s' % (self.path,
                                                            getattr(e, 'strerror', e)))
            return self
        self._write({'type': 'run', 'journal': VERSION, 'manifest': manifest,
                     'rounds': self.rounds, 'interval': self.period})
        return self

    def start(self, phase):
        self._flush_pending()
        # A round begins with the first phase (--repeat); the steps of a --find-max
        # search on the first phase are steps of one round.
        if phase.index == 0 and (self.rounds > 1 or not self._round):
            self._round += 1

    def opened(self, phase):
        self._outage = False
        self._write({'type': 'phase_start', 'phase': phase.name, 'index': phase.index,
                     'round': self._round, 'started_unix': round(phase.window.wall0, 3)})

    def interval(self, phase, row, notes):
        self._write({'type': 'interval', 'phase': phase.name, 'round': self._round,
                     'row': row})
        watch = phase.budget.watch
        active = watch is not None and watch.active
        if active != self._outage:
            self._outage = active
            self._event(phase, 'outage_started' if active else 'outage_ended', row['t'])
        if self.injector is not None and len(self.injector.events) > self._faults_told:
            for e in self.injector.events[self._faults_told:]:
                self._event(phase, 'fault', round(e['t'] - phase.window.t0, 3),
                            fault=dict(e, t=round(e['t'] - phase.window.t0, 3)))
            self._faults_told = len(self.injector.events)

    def end(self, phase, result):
        # Called last of the listeners' ends (first of the run's listeners): every
        # section is in. What the caller adds after (--find-max's step number) is
        # written with it at the next switch, which comes before anything the phase's
        # end leaves to wait (the next phase, a step's warm-up, the final report).
        self._event(phase, 'phase_end', round(phase.window.seconds, 4))
        self._pending.append((self._round, result))
        gevent.spawn(self._flush_pending)

    def searched(self, find_max):
        self._flush_pending()
        last = find_max['steps'][-1] if find_max.get('steps') else None
        self._write({'type': 'event', 'event': 'find_max_step', 'step': last})

    def finish(self, result):
        """The run's end: the phases not written yet, then its own sections."""
        self._flush_pending()
        self._write(dict((k, result[k]) for k in ('aborted', 'verify', 'faults', 'find_max',
                                                  'live') if k in result), type='end')
        self.close()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def _flush_pending(self):
        pending, self._pending = self._pending, []
        for rnd, result in pending:
            self._write({'type': 'phase', 'round': rnd, 'result': result})

    def _event(self, phase, name, t, **more):
        record = {'type': 'event', 'event': name, 'phase': phase.name, 'round': self._round,
                  't': t}
        record.update(more)
        self._write(record)

    def _write(self, record, **more):
        if self._file is None:
            return
        record.update(more)
        try:
            line = json.dumps(record, sort_keys=True, separators=(',', ':'))
            self._file.write(u'%s\n' % (line if isinstance(line, type(u'')) else
                                        line.decode('utf-8')))
            self._file.flush()
        except (IOError, OSError) as e:   # a full disk: the run goes on, said once
            errors.say('--journal %s: %s; the journal stops here'
                       % (self.path, getattr(e, 'strerror', e)))
            self._file = None
