"""Flame graphs' data: folded stacks read, summed, summarised, written as speedscope JSON.

A sampler (py-spy on the client, perf on the server: run/sampler.py) writes folded
stacks, flamegraph.pl's format: one line per distinct stack, root first, frames joined
by ``;``, then a space and the number of samples. This module turns such a file into
the phase's ``flamegraph`` section (the stacks themselves, so the report page and
``gloaddriver compare`` need no other file), writes the speedscope JSON beside it
(speedscope.app opens it), merges the sections of processes that ran side by side and
computes the differential of two runs. No processes and no sockets here.
"""
from __future__ import absolute_import, division, print_function

import io
import json
import os

from gloaddriver.measure import libraries

# Stacks kept in the result: the heaviest ones. A CPU-bound phase has a few hundred
# distinct stacks; the cap keeps a long, varied run's JSON small; what it drops is
# counted (``dropped_samples``), never silently lost from the totals.
MAX_STACKS = 2000
TOP = 10
SPEEDSCOPE_SCHEMA = 'https://www.speedscope.app/file-format-schema.json'


def read_folded(path):
    """{stack: samples} from a folded-stacks file (missing file: empty)."""
    stacks = {}
    if not os.path.exists(path):
        return stacks
    with io.open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            add_line(stacks, line)
    return stacks


def add_line(stacks, line):
    """One folded line into {stack: samples}; a line without a count is skipped."""
    stack, _sep, n = line.rstrip('\n').rpartition(' ')
    if stack and n.isdigit():
        stacks[stack] = stacks.get(stack, 0) + int(n)


def write_folded(stacks, path):
    with io.open(path, 'w', encoding='utf-8') as f:
        for stack, n in sorted(stacks.items(), key=lambda kv: -kv[1]):
            f.write(u'%s %d\n' % (stack, n))


def write_speedscope(stacks, name, path):
    """The stacks as a speedscope "sampled" profile (one sample per distinct stack,
    weighted by its count): what https://www.speedscope.app opens."""
    index, frames, samples, weights = {}, [], [], []
    for stack, n in sorted(stacks.items()):
        ids = []
        for frame in stack.split(';'):
            if frame not in index:
                index[frame] = len(frames)
                frames.append(_speedscope_frame(frame))
            ids.append(index[frame])
        samples.append(ids)
        weights.append(n)
    total = sum(weights)
    doc = {'$schema': SPEEDSCOPE_SCHEMA, 'exporter': 'gloaddriver', 'name': name,
           'activeProfileIndex': 0, 'shared': {'frames': frames},
           'profiles': [{'type': 'sampled', 'name': name, 'unit': 'none', 'startValue': 0,
                         'endValue': total, 'samples': samples, 'weights': weights}]}
    with io.open(path, 'w', encoding='utf-8') as f:
        f.write(json.dumps(doc, separators=(',', ':'), ensure_ascii=False))


def _speedscope_frame(frame):
    """py-spy's ``func (file:line)`` split into speedscope's name, file and line."""
    name, sep, where = frame.partition(' (')
    if sep and where.endswith(')'):
        path, _c, line = where[:-1].rpartition(':')
        if path and line.isdigit():
            return {'name': name, 'file': path, 'line': int(line)}
    return {'name': frame}


def section(stacks, files, **extra):
    """A phase's ``flamegraph`` section from its stacks: totals, the heaviest stacks
    (at most MAX_STACKS), the top functions by own samples, and ``extra`` (the
    sampler, its rate and overhead)."""
    total = sum(stacks.values())
    kept = sorted(stacks.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_STACKS]
    out = dict(extra)
    out.update({'samples': total, 'files': list(files),
                'stacks': dict(kept),
                'dropped_samples': total - sum(n for _s, n in kept),
                'top': top_frames(stacks, total)})
    if extra.get('sampler') == 'py-spy':     # Python's frames (the server's are perf's)
        out['libraries'] = by_library(stacks, total)
    return out


def by_library(stacks, total):
    """Own samples (the frame on top of the stack) by library. A sampler of Python
    frames sees no C function: time in one (psycopg2's execute) is its caller's."""
    own = []
    for stack, count in stacks.items():
        name, path = _frame_file(stack.rpartition(';')[2])
        own.append((libraries.library(path, name), count))
    return libraries.split(own, total)


def _frame_file(frame):
    """(function, file) of a folded frame, py-spy's ``func (file:line)``."""
    f = _speedscope_frame(frame)
    return f['name'], f.get('file', '')


def top_frames(stacks, total=None, n=TOP):
    """The n frames with the most samples on top of the stack (own samples), with
    their share of all samples, and their inclusive share (on the stack at all)."""
    total = sum(stacks.values()) if total is None else total
    own, incl = {}, {}
    for stack, count in stacks.items():
        frames = stack.split(';')
        own[frames[-1]] = own.get(frames[-1], 0) + count
        for f in set(frames):
            incl[f] = incl.get(f, 0) + count
    rows = sorted(own.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return [{'frame': f, 'own_samples': c,
             'own_share': round(c / total, 4) if total else None,
             'total_share': round(incl[f] / total, 4) if total else None} for f, c in rows]


def merged(blocks):
    """One section from the same phase's sections of processes that ran side by side:
    stacks and samples add up, files are listed together, the sampler's CPU adds up."""
    blocks = [b for b in blocks if b]
    if not blocks:
        return None
    stacks = {}
    for b in blocks:
        for stack, n in (b.get('stacks') or {}).items():
            stacks[stack] = stacks.get(stack, 0) + n
    files = [f for b in blocks for f in b.get('files') or ()]
    extra = dict((k, v) for k, v in blocks[0].items()
                 if k not in ('samples', 'files', 'stacks', 'dropped_samples', 'top'))
    cpu = [b.get('sampler_cpu_seconds') for b in blocks]
    if all(c is not None for c in cpu):
        extra['sampler_cpu_seconds'] = round(sum(cpu), 3)
    out = section(stacks, files, **extra)
    out['dropped_samples'] += sum(b.get('dropped_samples') or 0 for b in blocks)
    out['samples'] += sum(b.get('dropped_samples') or 0 for b in blocks)
    return out


def comparable(stacks):
    """Stacks whose frames compare across interpreters: py-spy names a 3.x frame by its
    qualified name (``Hub.run``, ``Connection._reader.<locals>.on_readable``) and a 2.7
    frame by its plain one (``run``); both become the plain name, file and line kept."""
    out = {}
    for stack, n in stacks.items():
        key = ';'.join(_plain(f) for f in stack.split(';'))
        out[key] = out.get(key, 0) + n
    return out


def _plain(frame):
    name, sep, where = frame.partition(' (')
    return name.rpartition('.')[2] + sep + where if sep else frame


def write_differential(a, b, path):
    """flamegraph.pl's differential input (difffolded.pl's output): ``stack A B`` a line,
    the counts of each run; ``flamegraph.pl`` colours what grew red, what shrank blue."""
    with io.open(path, 'w', encoding='utf-8') as f:
        for stack in sorted(set(a) | set(b)):
            f.write(u'%s %d %d\n' % (stack, a.get(stack, 0), b.get(stack, 0)))


def frame_deltas(a, b, n=TOP):
    """The frames whose inclusive share moved most from A to B: [(frame, share A,
    share B)], the biggest moves first."""
    ia, ib = _inclusive(a), _inclusive(b)
    rows = [(f, ia.get(f, 0.0), ib.get(f, 0.0)) for f in set(ia) | set(ib)]
    rows.sort(key=lambda r: (-abs(r[2] - r[1]), r[0]))
    return rows[:n]


def _inclusive(stacks):
    total = sum(stacks.values())
    out = {}
    for stack, count in stacks.items():
        for f in set(stack.split(';')):
            out[f] = out.get(f, 0) + count
    return dict((f, c / total) for f, c in out.items()) if total else {}
