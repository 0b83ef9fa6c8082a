"""The docs' examples of output, and what they are checked against: the lines that real
runs of today's code print (tests/unit/test_docs.py).

Every fenced block of README.md and the hand-written docs/ pages without a language
tag (```text marks a diagram, ```python code), and every indented block, is read line
by line: commands (``gloaddriver ...``, ``scripts/...``: COMMAND), their continuation
lines and blank lines are skipped; every other line is an example of output. So is
every inline code span that starts with ``| `` (the tail of a progress line) or
``gloaddriver: `` (a one-line message).

An example must have the format of a line that a real run prints (``Reference``): the
same words in the same order, any number where the run printed a number, any phase
name where it printed one, the padding aside. A line cut short with ``...`` must begin
as such a line does; a line that is only ``...`` stands for lines left out. An inline
span must be part of such a line.

``references(folder)`` makes the lines: real runs against private servers (a
Tarantool with a fault, --verify and a dead --graphite; a ramp of --stages with --web;
``gloaddriver pgbench`` on PostgreSQL; a refused connection), and the report's own
formatters (report.text, report.results.compare, run.listeners.progress_line,
client_bound) applied to those runs' results with the branches a short run does not
reach turned on: warnings, a failover, every fault, an open loop, the footnote of each
syscall source. Phase names and free text (error messages, reasons) are put in as
NAME and ANY, which match any phase name and any text.
"""
from __future__ import absolute_import, division, print_function

import copy
import io
import json
import os
import re
import socket
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATED = ('docs/cli.md', 'docs/result.md')   # made from the code whole (scripts/docsgen.py)

NAME = '<<NAME>>'   # any phase name
ANY = '<<ANY>>'     # any text

# A command a reader types, not output: the driver (not its "gloaddriver 0.1.0: ..."
# headline nor a "gloaddriver: ..." message), Python, the scripts, the tools the docs run.
COMMAND = re.compile(r'^(?:gloaddriver(?= +[^\d\s]| *$)|python\S* |venv27/|\.venv/|scripts/|'
                     r'deploy/|docker |pipx? |kcachegrind |kubectl |sed |[A-Z][A-Z0-9_]*=)')
_NUMBER = re.compile(r'(?<![\w.])-?\d[\d,]*(?:\.\d+)*')


# -- the examples in the pages ------------------------------------------------------------

def pages():
    """[(path from the checkout, text)]: README.md and the hand-written docs/ pages."""
    names = ['README.md'] + sorted('docs/' + n for n in os.listdir(os.path.join(ROOT, 'docs'))
                                   if n.endswith('.md'))
    out = []
    for name in names:
        if name not in GENERATED:
            with io.open(os.path.join(ROOT, name), encoding='utf-8') as f:
                out.append((name, f.read()))
    return out


def _output_lines(lines, first):
    """(line number, line) of the output among a block's lines."""
    out = []
    continued = False
    for i, line in enumerate(lines):
        text = line.strip()
        if continued or not text or COMMAND.match(text):
            continued = bool(text) and text.endswith('\\') and (continued or
                                                                bool(COMMAND.match(text)))
            continue
        out.append((first + i, line.rstrip()))
    return out


def examples(text):
    """(line number, example, is a whole line) of a page: the output lines of its code
    blocks, and its inline spans of output."""
    lines = text.split('\n')
    found = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('```'):
            lang = line[3:].strip()
            j = i + 1
            while j < len(lines) and not lines[j].startswith('```'):
                j += 1
            if not lang:
                found += [(n, l, True) for n, l in _output_lines(lines[i + 1:j], i + 2)]
            i = j + 1
            continue
        # An indented block: after a blank line that does not end a list.
        if line.startswith('    ') and i > 0 and not lines[i - 1].strip():
            before = [l for l in lines[:i] if l.strip()]
            if before and not re.match(r'^(\* |- |\d+\. |  )', before[-1]):
                j = i
                while j < len(lines) and (lines[j].startswith('    ') or not lines[j].strip()):
                    j += 1
                block = [l[4:] for l in lines[i:j]]
                found += [(n, l, True) for n, l in _output_lines(block, i + 1)]
                i = j
                continue
        for span in re.findall(r'`([^`]+)`', line):
            if span.startswith('| ') or span.startswith('gloaddriver: '):
                found.append((i + 1, span, False))
        i += 1
    return found


# -- formats -----------------------------------------------------------------------------

def canon(line):
    """A line with every number as ``#``, as words: the padding is not its format."""
    return [w if w != '-' else '#' for w in _NUMBER.sub('#', line).split()]


def _word(w):
    return re.escape(w).replace(re.escape(NAME), r'\S+').replace(re.escape(ANY), '.*')


class Reference(object):
    """The lines real runs printed, as patterns of words."""

    def __init__(self):
        self.lines = []     # canonical words
        self._whole = []
        self._start = []
        self._text = []

    def add(self, line, names=()):
        """A line a run printed; ``names``: its phase names, matched as any phase name."""
        for name in sorted(names, key=len, reverse=True):
            line = re.sub(r'(?<![\w-])%s(?![\w-])' % re.escape(name), NAME, line)
        words = canon(line)
        if not words or words in self.lines:
            return
        self.lines.append(words)
        parts = [_word(w) for w in words]
        self._whole.append(re.compile(' '.join(parts) + '$'))
        self._start.append(parts)
        self._text.append(' '.join(words))

    def _begins(self, parts, text, count):
        """Whether ``text`` (of ``count`` words) is how a line of these parts begins:
        its first words, the last one perhaps cut."""
        return any(re.match(' '.join(parts[:j]) + '$', text)
                   for j in range(1, min(len(parts), count + 2) + 1))

    def has(self, example, whole=True):
        """Whether an example line (or, not whole, an inline span) has a run's format."""
        if example.strip() == '...':
            return True
        words = canon(example)
        cut = bool(words) and words[-1].endswith('...')
        if cut:
            words[-1] = words[-1][:-3]
            if not words[-1]:
                words.pop()
        text = ' '.join(words)
        if not whole:
            return any(text in t for t in self._text)
        if cut:
            return any(self._begins(parts, text, len(words)) for parts in self._start)
        return any(p.match(text) for p in self._whole)


# -- the real runs -------------------------------------------------------------------------

def _free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _run(args, folder):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop('GLOADDRIVER_PASSWORD', None)
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver'] + args, cwd=folder, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    return p.returncode, out.decode('utf-8').splitlines(), err.decode('utf-8').splitlines()


def _load(path):
    from tests import result_schema
    with io.open(path, encoding='utf-8') as f:
        return result_schema.read(f)


def runs(folder):
    """The real runs: {name: (exit code, stdout lines, stderr lines, result or None)}."""
    folder = str(folder)
    dead = _free_port()
    plans = {
        # A Tarantool killed and started mid-phase, read back, with a collector that is
        # not there: progress lines, the table, outage, faults, verify, the notes.
        'tarantool': ['--spawn', '--phases', 'insert,select', '--ops', '0', '--duration',
                      '1.6', '--progress', '0.4', '--fault', 'kill@0.5s,start@0.9s',
                      '--verify', '--graphite', '127.0.0.1:%d' % dead],
        # A ramp of greenlets, served live: its progress tails, stage lines, the URL.
        'stages': ['--spawn', '--phases', 'insert', '--stages', '600ms:4,600ms:4,300ms:0',
                   '--progress', '0.3', '--web', '127.0.0.1:%d' % _free_port()],
        # pgbench's summary on PostgreSQL, retries asked for, a row per statement.
        'pgbench': ['pgbench', '-c', '2', '-T', '1', '-S', '-r', '--max-tries', '2', '--',
                    '--spawn', '--progress', '0.4'],
        # A server that is not there.
        'refused': ['--uri', '127.0.0.1:%d' % dead, '--ops', '1'],
    }
    out = {}
    for name, args in plans.items():
        path = os.path.join(folder, name + '.json')
        rc, stdout, stderr = _run(args + ['--json', path], folder)
        out[name] = (rc, stdout, stderr, _load(path) if os.path.exists(path) else None)
    return out


# -- the formatters, on those runs' results ------------------------------------------------

def _doctored(result):
    """A copy whose phase names are NAME and whose free texts are ANY."""
    r = copy.deepcopy(result)
    for p in r['phases']:
        p['name'] = NAME
        n = sum(p['errors'].values())
        p['errors'] = {ANY: n} if n else {}
        p['error_samples'] = {ANY: ANY} if n else {}
        p['error_origins'] = {ANY: ANY} if n else {}
        for o in p.get('outages') or ():
            o['first_error'] = ANY
        if p.get('ops'):
            p['ops'] = dict((NAME, v) for v in p['ops'].values())
    r['manifest']['syscall_reason'] = ANY
    if r.get('aborted'):
        r['aborted'] = ANY
    return r


def _table_variants(result):
    """The result as it is, and with the report's branches a short run does not reach."""
    from gloaddriver.measure import client_bound
    base = _doctored(result)
    yield base
    for source in ('perf_event', 'io_calls', None):
        r = copy.deepcopy(base)
        r['manifest']['syscall_source'] = source
        for p in r['phases']:
            p['syscalls']['source'] = source
        yield r
    # Warnings: CPU-bound with and without other work on the machine, an open loop that
    # fell behind (with its open-loop line).
    for waiting in (0.35, 0.05, None):
        r = copy.deepcopy(base)
        for p in r['phases']:
            p['client'] = {'cpu': 0.6, 'waiting': waiting, 'busy': 0.95 + (waiting or 0)}
            p['rate'] = {'target': 1000.0, 'arrival': 'constant', 'achieved': 500.0,
                         'late': 3, 'late_after_ms': 1.0, 'dropped': 2, 'scheduled': 10,
                         'latency_limit_ms': None}
            p['service_time_us'] = dict(p['latency_us'])
            p['warnings'] = client_bound.phase_warnings(p)
        r['warnings'] = client_bound.collect(r['phases'])
        yield r
    # A profile's and a flame graph's own time by library (--pstats, --flamegraph).
    r = copy.deepcopy(base)
    r['manifest']['profiler'] = 'yappi (cpu clock)'
    libs = [{'library': n, 'own': 1.0, 'own_share': 0.1} for n in (
        'sqlalchemy', 'python', 'gloaddriver', 'psycopg2', 'hdrh', 'gevent')]
    for p in r['phases']:
        p['profile'] = {'profiler': 'yappi', 'clock': 'cpu', 'files': [], 'top': [],
                        'libraries': libs}
        p['flamegraph'] = {'sampler': 'py-spy', 'rate': 100, 'samples': 10, 'files': [],
                           'stacks': {}, 'dropped_samples': 0, 'top': [], 'libraries': libs}
    yield r
    # Outages: open, closed, with a failover; every fault, on a replica set or not.
    r = copy.deepcopy(base)
    one = {'start': 1.0, 'end': 2.0, 'duration': 1.0, 'open': False, 'failed': 2,
           'timed_out': 1, 'reconnects': 1, 'returned': 1.5, 'recovery': 0.5,
           'first_error': ANY, 'errors': {ANY: 3}, 'member_before': '127.0.0.1:1',
           'member_after': '127.0.0.1:2'}
    outages = [one, dict(one, reconnects=2, member_after='127.0.0.1:1'),
               dict(one, end=None, open=True, reconnects=None, recovery=None)]
    faults = [{'action': 'promote', 'from': '127.0.0.1:1', 'to': '127.0.0.1:2', 't': 1.0,
               'took': 0.2}]
    for action in ('kill', 'start', 'stop', 'cont', 'restart'):
        for target in (None, 'leader', 'replica'):
            f = {'action': action, 't': 1.0, 'took': 0.3}
            if target:
                f.update(target=target, member='127.0.0.1:1')
            faults += [f, dict(f, took=0.0), dict(f, duration=3.0), dict(f, error=ANY)]
    for p in r['phases']:
        p['outages'] = outages
        p['faults'] = faults
    r['faults'] = []
    r['verify'] = dict(r.get('verify') or {'checked': 10, 'intact': 8, 'corrupt': 0,
                                          'unexpected': 0, 'unacknowledged_applied': 0,
                                          'notes': []},
                       acknowledged_lost=2, examples={'acknowledged_lost': [1, 2]})
    r['aborted'] = ANY
    yield r
    r = copy.deepcopy(r)
    r['verify'] = {'error': ANY}
    yield r
    for f in faults:    # the run's line of faults, one fault at a time
        r = copy.deepcopy(base)
        r['faults'] = [f]
        yield r


def _stage_variants(result):
    r = _doctored(result)
    for p in r['phases']:
        stages = p.get('stages') or []
        if stages:
            s = stages[0]
            rate = dict(s, unit='ops/s', achieved_rate=100.0, dropped=1)
            stages += [dict(s, seconds=0), dict(s, seconds=0.1), rate]
    return r


def _compare_lines(results, folder):
    """What ``gloaddriver compare`` prints for these results: rows per phase and file,
    every manifest field differing, a phase missing from a file."""
    from gloaddriver.report import results as compare_module
    here = os.getcwd()
    os.chdir(str(folder))
    try:
        lines = []
        base = _doctored(results[0])
        with io.open(ANY, 'w', encoding='utf-8') as f:
            f.write(u'%s' % json.dumps(base))
        buf = _Lines()
        compare_module.compare([ANY, ANY, ANY], out=buf)
        lines += buf.lines
        a, b = copy.deepcopy(base), copy.deepcopy(base)
        a['manifest'] = _every_leaf(a['manifest'], ANY)
        b['manifest'] = _every_leaf(b['manifest'], ANY + ' ')
        b['phases'] = b['phases'][:-1]
        for name, r in (('a.json', a), ('b.json', b)):
            with io.open(name, 'w', encoding='utf-8') as f:
                f.write(u'%s' % json.dumps(r))
        buf = _Lines()
        compare_module.compare(['a.json', 'b.json'], out=buf)
        lines += buf.lines
        return lines
    finally:
        os.chdir(here)


def _every_leaf(d, value):
    return dict((k, _every_leaf(v, value) if isinstance(v, dict) else value)
                for k, v in d.items())


class _Lines(object):
    def __init__(self):
        self.parts = []

    def write(self, text):
        self.parts.append(text)

    def flush(self):
        pass

    @property
    def lines(self):
        return ''.join(self.parts).splitlines()


def _progress_variants(result):
    """Progress lines of a real row: in an outage, under a ramp of greenlets or of ops/s,
    with each thing a server sample can say."""
    from gloaddriver.backends.postgres import metrics as pg_metrics
    from gloaddriver.backends.tarantool import metrics as tnt_metrics
    from gloaddriver.measure.server_metrics import ServerMetrics
    from gloaddriver.run.listeners import progress_line
    rows = [row for p in result['phases'] for row in p.get('timeline') or ()][:1]
    tails = ['']
    for label in (tnt_metrics.PROGRESS_LABEL, pg_metrics.PROGRESS_LABEL):
        m = ServerMetrics(None, None, ['x'], [], progress_label=label)
        tails += [m.describe({'rps': {'x': 10.0}, 'counts': {'x': 10}}),
                  m.describe({'rps': {'x': 10.0}, 'counts': {'x': 10}, 'cpu_pct': 50.0}),
                  m.describe({'late': True}), m.describe({'server_restarted': True})]
    out = []
    for row in rows:
        for staged in ({}, {'target': 5, 'active': 5}, {'target': 1000.0}):
            for tail in tails:
                for outage in (False, True):
                    out.append(progress_line(NAME, dict(row, **staged), tail, outage))
    return out


def references(folder):
    """A Reference of every line the runs printed and the formatters make of them."""
    from gloaddriver.report import text
    ref = Reference()
    made = runs(folder)
    results = []
    for name, (rc, stdout, stderr, result) in sorted(made.items()):
        names = [p['name'] for p in result['phases']] if result else []
        for line in stdout + stderr:
            ref.add(line, names)
        if result is not None:
            results.append(result)
            for variant in _table_variants(result):
                for line in text.table(variant):
                    ref.add(line)
            for line in text.table(_stage_variants(result)):
                ref.add(line)
            for line in _progress_variants(result):
                ref.add(line)
    for line in _compare_lines(results, folder):
        ref.add(line)
    return ref, made
