"""--journal FILE and ``gloaddriver report JOURNAL``: a run killed with SIGKILL mid-phase
is rebuilt from its journal up to the last interval written, on a private Tarantool and
a private PostgreSQL; a run that went to its end is rebuilt into what --json held."""
from __future__ import absolute_import, division, print_function

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from tests import result_schema
from tests.integration.conftest import ROOT, assert_accounted, run_cli, started_driver

# A progress line: seconds into the phase, the phase, ops/s, p99, errors.
PROGRESS = re.compile(r'^\s*([\d.]+)s (\S+)\s+([\d,]+|-) ops/s  p99\s+([\d,]+) us  '
                      r'errors (\d+) ')
BACKENDS = {
    'tarantool': ['--spawn'],
    'postgres': ['--backend', 'postgres', '--spawn', '--greenlets', '8'],
}


@pytest.fixture
def folder():
    path = tempfile.mkdtemp(prefix='journal-')
    yield path
    shutil.rmtree(path)


def report(journal, folder, *more):
    """``gloaddriver report JOURNAL --json F [MORE]``: (its stdout, the result)."""
    out = os.path.join(folder, 'rebuilt.json')
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', 'report', journal, '--json',
                          out] + list(more), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    stdout, stderr = p.communicate()
    assert p.returncode == 0, stderr
    with open(out) as f:
        return stdout.decode('utf-8'), result_schema.read(f)


def printed(stderr):
    """[(phase, [(t, ops/s, p99, errors)])] of the progress lines, phase by phase."""
    out = []
    for line in stderr.splitlines():
        m = PROGRESS.match(line)
        if not m:
            continue
        t, name, rate, p99, errs = m.groups()
        if not out or out[-1][0] != name or float(t) <= out[-1][1][-1][0]:
            out.append((name, []))
        out[-1][1].append((float(t), rate, int(p99.replace(',', '')), int(errs)))
    return out


def as_printed(row):
    """A timeline row as its progress line shows it."""
    rate = '{:,}'.format(int(row['attempted'] / row['seconds'])) if row['seconds'] > 0 else '-'
    return (round(row['t'], 1), rate, row['latency_us']['p99'] or 0, row['errors'])


@pytest.mark.parametrize('backend', sorted(BACKENDS))
def test_killed_mid_phase_rebuilds_up_to_the_last_interval(backend, folder):
    journal = os.path.join(folder, 'run.journal')
    p = started_driver(BACKENDS[backend] + ['--phases', 'insert,select', '--ops', '0',
                                            '--duration', '4', '--journal', journal], {})
    # Started at the first progress line (0.5 s into insert): killed in select, 0.5 to
    # 3 s into it.
    time.sleep(4.0 + random.uniform(0.5, 3.0))
    os.kill(p.pid, signal.SIGKILL)
    _out, rest = p.communicate()
    stderr = p.stderr_before + rest.decode('utf-8', 'replace')
    assert p.returncode == -signal.SIGKILL
    page, csv = os.path.join(folder, 'rebuilt.html'), os.path.join(folder, 'rebuilt')
    table, result = report(journal, folder, '--html', page, '--csv', csv)
    assert result['aborted'].startswith('cut short: the journal %s ends in phase select'
                                        % journal), result['aborted']
    assert 'ABORTED: cut short' in table
    with open(page) as f:     # the page says so too (its verdict is the JSON's)
        assert 'cut short: the journal' in f.read()
    assert os.path.getsize(csv + '_history.csv') > 0
    assert [p['name'] for p in result['phases']] == ['insert', 'select']
    check_rebuilt(stderr, result)
    insert, select = result['phases']
    assert not partial(insert) and partial(select)
    assert select['attempted'] == sum(r['attempted'] for r in select['timeline']) > 0


def test_killed_at_random_moments(folder):
    """Three kills anywhere from 0.5 s into the first phase to the end of the second
    (between two phases, too): each journal rebuilds consistently."""
    for attempt in range(3):
        journal = os.path.join(folder, 'run%d.journal' % attempt)
        p = started_driver(['--spawn', '--phases', 'insert,select', '--ops', '0',
                            '--duration', '3', '--journal', journal], {})
        time.sleep(random.uniform(0.0, 5.5))
        os.kill(p.pid, signal.SIGKILL)
        _out, rest = p.communicate()
        _table, result = report(journal, folder)
        assert result['aborted'].startswith('cut short: the journal %s ends ' % journal)
        check_rebuilt(p.stderr_before + rest.decode('utf-8', 'replace'), result)


def partial(phase):
    return [n for n in phase.get('notes', ()) if n.startswith('partial: cut short at')]


def check_rebuilt(stderr, result):
    """A killed run's rebuilt result against the progress lines it printed: each line is
    a row of the rebuilt timeline, in order (the journal may hold one row more: written,
    and the kill came before its line);
    the phases finished before the kill are their records (with their CPU), and only the
    last may be partial."""
    lines = printed(stderr)
    names = [p['name'] for p in result['phases']]
    assert names[:len(lines)] == [name for name, _rows in lines], (names, lines)
    assert len(names) - len(lines) in (0, 1), (names, lines)
    for phase, (_name, shown) in zip(result['phases'], lines):
        rows = phase['timeline']
        assert [as_printed(r) for r in rows[:len(shown)]] == [
            (round(t, 1), rate, p99, errs) for t, rate, p99, errs in shown]
        # A finished phase may hold two more: its last, partial interval, and a row the
        # ticker wrote as the phase ended, stopped before its line (as in --json).
        assert len(rows) - len(shown) in ((0, 1) if partial(phase) else (0, 1, 2)), \
            (len(rows), len(shown))
    for phase in result['phases'][:-1]:
        assert not partial(phase) and phase['cpu_seconds'] is not None
    last = result['phases'][-1] if result['phases'] else None
    if last is not None and partial(last):
        assert last['attempted'] == sum(r['attempted'] for r in last['timeline'])
    assert_accounted(result)


@pytest.mark.parametrize('backend', sorted(BACKENDS))
def test_a_run_to_its_end_rebuilds_into_its_json(backend, folder):
    """The journal's phase records are what --json holds: a run that ended is rebuilt
    into the same phases, and so are the phases a killed run finished."""
    journal = os.path.join(folder, 'run.journal')
    rc, out, err, res = run_cli(BACKENDS[backend] + [
        '--mix', 'select=80,update=20', '--ops', '0', '--duration', '2', '--journal',
        journal])
    assert rc == 0, err
    table, rebuilt = report(journal, folder)
    assert rebuilt['phases'] == res['phases']
    assert rebuilt['aborted'] is None and rebuilt['warnings'] == res['warnings']
    assert 'ABORTED' not in table


@pytest.mark.parametrize('args', [
    ['--phases', 'insert,select', '--ops', '3000', '--repeat', '2'],
    ['--phases', 'select', '--find-max', 'p99<50ms', '--find-max-start', '1000',
     '--find-max-step', '0.6', '--find-max-steps', '3', '--find-max-warmup', '0'],
])
def test_rounds_and_steps_are_rebuilt_as_json_has_them(args, folder):
    """Each round's ``repeat`` and the summary; each --find-max step's ``step`` (set after
    the phase ended) and the search."""
    journal = os.path.join(folder, 'run.journal')
    rc, out, err, res = run_cli(['--spawn', '--journal', journal] + args)
    assert rc == 0, err
    _table, rebuilt = report(journal, folder)
    assert rebuilt['phases'] == res['phases']
    for key in ('repeat', 'find_max'):
        assert rebuilt.get(key) == res.get(key)


def test_on_by_default_beside_json_for_a_run_of_over_a_minute(folder):
    """Said in one line as the run starts; an interrupted run's journal ends as it did."""
    path = os.path.join(folder, 'r.json')
    p = started_driver(['--spawn', '--phases', 'insert,select', '--ops', '0', '--duration',
                        '31', '--json', path], {})
    assert 'gloaddriver: journal: %s.journal, written as the run goes' % path \
        in p.stderr_before, p.stderr_before
    p.send_signal(signal.SIGINT)
    p.communicate()
    assert p.returncode == 130
    _table, rebuilt = report(path + '.journal', folder)
    with open(path) as f:
        written = result_schema.read(f)
    assert rebuilt['phases'] == written['phases']
    assert rebuilt['aborted'] == written['aborted'] == 'interrupted'
    # a run of a minute or less, one bounded by --ops, or --no-journal: none
    from gloaddriver import config
    for args in (['--phases', 'select', '--ops', '0', '--duration', '60'],
                 ['--phases', 'insert,select', '--ops', '100000'],
                 ['--phases', 'insert,select', '--ops', '0', '--duration', '31',
                  '--no-journal']):
        assert config.parse(['--spawn', '--json', path] + args).output.journal is None
    assert config.parse(['--spawn', '--json', path, '--ops', '0', '--duration', '31', '--phases',
                         'insert,select']).output.journal == path + '.journal'


@pytest.mark.parametrize('args, words', [
    (['--journal', '/nonexistent/x.journal'], '--journal /nonexistent/x.journal: folder'),
    (['--journal', 'x.journal', '--processes', '2'], '--journal does not go with --processes'),
])
def test_bad_journal_is_one_line_before_the_run(args, words):
    rc, out, err, res = run_cli(['--spawn'] + args)
    assert rc == 2, err
    assert err.strip().count('\n') == 0 and words in err, err


def test_report_of_what_is_not_a_journal_is_one_line(folder):
    path = os.path.join(folder, 'x.journal')
    with open(path, 'w') as f:
        f.write('{"phases": []}\n')
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', 'report', path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    _out, err = p.communicate()
    assert p.returncode == 2
    assert 'is not a gloaddriver journal' in err.decode() and err.decode().count('\n') == 1
