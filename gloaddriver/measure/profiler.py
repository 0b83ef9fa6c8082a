"""Per-phase client profiles: callgrind files for kcachegrind, pstats, top functions.

yappi with its greenlet context backend is the default: time is charged to
the greenlet that ran it (a worker parked in the hub is not "running"), and
greenlet names say what each context was (worker-7, tarantool-0-sweeper, Hub...).
Wall clock by default; the cpu clock costs several times more per call, and
each of its reads is a real clock_gettime syscall, which the report leaves out
of syscalls/op. GreenletProfiler (2.7 only) is an optional alternative.

A profiled run's ops/s and latencies include the profiler's cost: they are
where-the-time-goes figures, not throughput figures, and the report says so.
"""
from __future__ import absolute_import, division, print_function

import os

from gloaddriver import errors
from gloaddriver.measure import libraries

PROFILERS = ('yappi', 'greenletprofiler')
CLOCKS = ('wall', 'cpu')
TOP = 12


def _greenlet_name():
    import gevent
    g = gevent.getcurrent()
    name = getattr(g, 'name', None)
    if name:
        return name
    if g is gevent.get_hub():
        return 'hub'
    return g.__class__.__name__


class Profiler(object):
    """``start(phase)`` before a phase's workers start, ``stop(phase)`` after they end."""

    def __init__(self, callgrind_dir=None, pstats_dir=None, clock='wall', kind='yappi'):
        self.callgrind_dir = callgrind_dir
        self.pstats_dir = pstats_dir
        self.clock = clock
        self.kind = kind
        self.pid = os.getpid()
        if kind == 'greenletprofiler':
            try:
                import GreenletProfiler
            except ImportError:
                raise errors.ConfigError(
                    '--profiler greenletprofiler needs the GreenletProfiler package, which '
                    'builds on Python 2.7 only (pip install GreenletProfiler); yappi, the '
                    'default, works everywhere')
            self._lib = GreenletProfiler
        else:
            try:
                import yappi
            except ImportError:
                raise errors.ConfigError('profiling needs yappi: pip install "gloaddriver[profile]"')
            self._lib = yappi
        for d in (callgrind_dir, pstats_dir):
            if d:
                try:
                    if not os.path.isdir(d):
                        os.makedirs(d)
                except OSError as e:
                    raise errors.ConfigError('cannot create the profile directory %r: %s' % (d, e))

    def describe(self):
        return '%s, %s clock' % (self.kind, self.clock)

    def start(self, phase):
        lib = self._lib
        if self.kind == 'yappi':
            lib.set_clock_type(self.clock)
            lib.set_context_backend('greenlet')
            lib.set_context_name_callback(_greenlet_name)
            lib.clear_stats()
            lib.start(builtins=True)
        else:
            lib.set_clock_type(self.clock)
            lib.start()

    def stop(self):
        """Stop collecting (before the phase's counters are read)."""
        self._lib.stop()

    def save(self, phase):
        """Write the phase's files; return {'files', 'top', 'greenlets', ...}."""
        lib = self._lib
        stats = lib.get_func_stats()
        files = []
        if self.callgrind_dir:
            path = os.path.join(self.callgrind_dir, 'callgrind.out.%s.%d' % (phase, self.pid))
            stats.save(path, type='callgrind')
            files.append(path)
        if self.pstats_dir:
            path = os.path.join(self.pstats_dir, 'pstats.%s.%d' % (phase, self.pid))
            stats.save(path, type='pstat')
            files.append(path)
        top = top_functions(stats)
        own = [(libraries.library(st.module, st.name), st.tsub) for st in stats]
        greenlets = []
        if self.kind == 'yappi':
            for g in lib.get_greenlet_stats():
                greenlets.append({'name': g.name, 'seconds': round(g.ttot, 6),
                                  'switches_in': g.sched_count})
            greenlets.sort(key=lambda g: -g['seconds'])
            lib.clear_stats()
        return {'profiler': self.kind, 'clock': self.clock, 'files': files, 'top': top,
                'libraries': libraries.split(own, sum(t for _l, t in own)),
                'greenlets': _fold_greenlets(greenlets)}


def top_functions(stats, n=TOP):
    """The n functions with the most own time, as plain dicts."""
    rows = []
    total = 0.0
    for s in stats:
        total += s.tsub
        rows.append(s)
    rows.sort(key=lambda s: -s.tsub)
    out = []
    for s in rows[:n]:
        out.append({'function': s.name, 'file': _short(s.module), 'line': s.lineno,
                    'calls': s.ncall, 'own_seconds': round(s.tsub, 6),
                    'own_share': round(s.tsub / total, 4) if total else None,
                    'total_seconds': round(s.ttot, 6)})
    return out


def _fold_greenlets(rows):
    """worker-0..worker-99 become one 'worker-*' row: one line, not a hundred."""
    folded = {}
    order = []
    for r in rows:
        name = r['name'] or '?'
        base, sep, tail = name.rpartition('-')
        key = base + '-*' if sep and tail.isdigit() and base.startswith(('worker', 'warmup')) \
            else name
        if key not in folded:
            folded[key] = {'name': key, 'seconds': 0.0, 'switches_in': 0, 'count': 0}
            order.append(key)
        f = folded[key]
        f['seconds'] = round(f['seconds'] + r['seconds'], 6)
        f['switches_in'] += r['switches_in']
        f['count'] += 1
    return sorted((folded[k] for k in order), key=lambda f: -f['seconds'])


def _short(path):
    """Paths shortened to what a reader needs: package-relative where possible."""
    if not path:
        return path
    for marker in ('site-packages' + os.sep, 'gloaddriver' + os.sep):
        i = path.rfind(marker)
        if i >= 0:
            return path[i + len(marker):] if marker.startswith('site') else path[i:]
    return os.path.basename(path)
