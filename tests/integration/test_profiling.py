"""Profiles (callgrind/pstats) and the perf stat cross-check, against a real Tarantool."""
from __future__ import absolute_import, division, print_function

import json
import os
import pstats
import subprocess
import sys

import pytest

from gloaddriver.backends.spawn import which
from tests.integration.conftest import ROOT, run_cli


def test_callgrind_files_per_phase_parse_cleanly_and_name_our_code(tarantool, space, tmpdir):
    outdir = str(tmpdir)
    rc, out, err, res = run_cli(['--space', space, '--greenlets', '100', '--ops', '5000',
                                 '--phases', 'insert,select', '--callgrind', outdir,
                                 '--pstats', outdir, '--profile-clock', 'cpu'], tarantool)
    assert rc == 0, err
    for phase in res['phases']:
        prof = phase['profile']
        cg = [f for f in prof['files'] if os.path.basename(f).startswith('callgrind.out.')]
        assert len(cg) == 1 and os.path.basename(cg[0]) == 'callgrind.out.%s.%s' % (
            phase['name'], cg[0].rsplit('.', 1)[1])
        names = [f['function'] for f in prof['top']]
        # where an op's CPU goes: the request path and the wake-ups of a chunk's callers,
        # which the callers make as they park (_await_reply), not start-up
        assert 'Connection.rows_frame' in names and '_await_reply' in names, names
        assert not any('spawn' in n or 'import' in n.lower() for n in names[:5]), names
        assert any(g['name'] == 'worker-*' and g['count'] == 100 for g in prof['greenlets'])
        # the connection reads and sends from hub callbacks: their time is the hub's
        assert any(g['name'].lower() == 'hub' for g in prof['greenlets']), prof['greenlets']
        st = pstats.Stats([f for f in prof['files'] if 'pstats.' in f][0])
        assert st.total_calls > 5000
        # the reader's reads and cuts, in the hub's callback
        assert [k for k in st.stats if k[2] == 'on_readable' and st.stats[k][1] > 0], \
            sorted(k[2] for k in st.stats)
        annotate = which('callgrind_annotate')
        if annotate:
            p = subprocess.Popen([annotate, cg[0]], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
            text, errtext = p.communicate()
            text = (text + errtext).decode('utf-8', 'replace')
            assert p.returncode == 0 and 'warning' not in text.lower(), text[:500]
            assert 'gloaddriver/backends/tarantool/connection.py' in text
    assert 'PROFILED' in out and 'not throughput figures' in out
    assert 'clock_gettime' in res['phases'][0]['syscalls'].get('excluded', {}) or \
        res['manifest']['syscall_source'] != 'perf_event'
    if not which('callgrind_annotate'):
        pytest.skip('callgrind_annotate (valgrind) not installed: files written, not parsed')


def test_wall_clock_profile_shows_waiting_as_its_own_row(tarantool, space, tmpdir):
    outdir = str(tmpdir)
    rc, out, err, res = run_cli(['--space', space, '--greenlets', '50', '--ops', '3000',
                                 '--phases', 'insert', '--callgrind', outdir], tarantool)
    assert rc == 0, err
    top = res['phases'][0]['profile']['top']
    assert top[0]['function'] == '_await_reply', top[:3]
    assert 'wall clock' in out


@pytest.mark.parametrize('args,words', [
    (['--profile-clock', 'cpu'], '--callgrind'),
    (['--profiler', 'greenletprofiler', '--callgrind', '/tmp/x-gloaddriver'], 'GreenletProfiler'),
])
def test_profiling_flags_that_cannot_work_say_why(tarantool, args, words):
    try:
        import GreenletProfiler  # noqa: F401
        if 'greenletprofiler' in args:
            pytest.skip('GreenletProfiler is installed here')
    except ImportError:
        pass
    rc, out, err, res = run_cli(args + ['--ops', '10'], tarantool)
    assert rc == 2 and words in err and 'Traceback' not in err, err


def test_in_process_syscall_counts_agree_with_perf_stat(tarantool):
    if not which('perf'):
        pytest.skip('perf is not installed (scripts/test installs linux-perf)')
    env = dict(os.environ, PYTHONPATH=ROOT, GLOADDRIVER_PASSWORD=tarantool.password)
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, 'scripts', 'syscalls.py'),
                          '--tolerance', '2', '--uri', tarantool.uri, '--user', tarantool.user,
                          '--space', 'gloaddriver', '--greenlets', '50', '--ops', '20000',
                          '--phases', 'insert,select,delete', '--progress', '0.2'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    out, err = p.communicate()
    lines = [l for l in out.decode().splitlines() if l.startswith('{')]
    assert lines, (out + err).decode()[-2000:]
    verdict = json.loads(lines[-1])
    rows = dict((r['syscall'], r) for r in verdict['rows'])
    assert rows['total']['perf_stat'] > 1000
    for name in ('total', 'sendto', 'recvfrom', 'epoll_wait'):
        assert abs(rows[name]['diff_pct']) <= 2.0, rows[name]
    assert verdict['agree'] and p.returncode == 0, verdict
