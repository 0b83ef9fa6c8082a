"""gloaddriver compat: passes for the real connector, catches the seed's port bug."""
from __future__ import absolute_import, division, print_function

import json
import os
import stat
import subprocess
import sys

import pytest

from tests import result_schema
from tests.integration.conftest import ROOT
from tests.integration.test_flamegraphs import needs_py_spy

PY27 = os.path.join(ROOT, '.venv', 'py27', 'bin', 'python')
PY311 = os.path.join(ROOT, '.venv', 'py311', 'bin', 'python')

# The seed's py3 port: the schema cache is filled under the decoded name but
# looked up by its raw bytes, so on Python 3 every lookup misses and re-fetches.
BROKEN_MAIN = '''
import sys
from gevent import monkey
monkey.patch_all()
from gloaddriver.backends.tarantool import connection, protocol as P
from gloaddriver.py23 import to_text


def space_id(self, name):
    key = name.encode('utf-8') if not isinstance(name, bytes) else name
    sid = self._space_ids.get(key)
    if sid is None:
        self.schema_fetches += 1
        sid = self.select(P.VSPACE_ID, [to_text(name)], index=P.NAME_INDEX)[0][0]
        self._space_ids[to_text(name)] = sid
    return sid


connection.Connection.space_id = space_id
from gloaddriver.cli import main
sys.exit(main())
'''

pytestmark = pytest.mark.skipif(not (os.path.exists(PY27) and os.path.exists(PY311)),
                                reason='needs .venv/py27 and .venv/py311 (made by scripts/test)')


def compat(args, workdir):
    out_json = os.path.join(workdir, 'compat.json')
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', 'compat', '--ops', '10000',
                          '--json', out_json] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=workdir)
    out, err = p.communicate()   # in workdir: its flame graphs go there by default
    rows = {}
    if os.path.exists(out_json):
        with open(out_json) as f:
            data = json.load(f)
        rows = dict((r['check'].split()[0], r) for r in data['rows'])
        # Each side's results are results: the schema holds for them on both interpreters.
        for side in ('A', 'B'):
            for result in [data[side]] + data['rounds'][side]:
                result_schema.validate(result)
    return p.returncode, out.decode(), err.decode(), rows


def test_real_connector_passes_on_27_and_311(tmpdir):
    workdir = str(tmpdir)
    rc, out, err, rows = compat(['--python', PY27, '--python', PY311], workdir)
    assert rc == 0, out + err
    assert 'verdict: PASS' in out
    assert all(r['verdict'] in ('PASS', 'EXPLAINED') for r in rows.values())
    for n in ('2', '3', '4', '6', '9', '10'):
        assert rows[n]['verdict'] == 'PASS', rows[n]
    assert '1.000, 0 schema fetches' in rows['6']['A'] and rows['6']['A'] == rows['6']['B']


@needs_py_spy
def test_compat_writes_the_differential_flame_graph_of_27_and_311_by_default(tmpdir):
    workdir = str(tmpdir)
    # 50,000 ops a phase: a second or so, enough samples at py-spy's 99 Hz
    rc, out, err, rows = compat(['--python', PY27, '--python', PY311, '--rounds', '1',
                                 '--ops', '50000'], workdir)
    assert 'verdict:' in out, out + err
    assert 'no flame graphs' not in err, err
    a, b = [], []
    for phase in ('insert', 'select', 'update'):
        path = os.path.join(workdir, 'compat-flamegraphs', 'diff.client.%s.B.folded' % phase)
        assert '%s: client CPU, A against B' % phase in out and path in out, out[-1500:]
        with open(path) as f:
            rows = [l.rsplit(' ', 2) for l in f.read().splitlines()]
        assert rows and all(x.isdigit() and y.isdigit() for _s, x, y in rows), rows[:3]
        a += [s for s, x, _y in rows if int(x)]
        b += [s for s, _x, y in rows if int(y)]
        assert [s for s, x, _y in rows if int(x)] and [s for s, _x, y in rows if int(y)]
    # frames of both runs: each side's ops are compiled for its own space, and their
    # frames name it (op_select (<ops of space compat_a>:4)); each only in its run's column
    assert any('<ops of space compat_a>' in s for s in a), a[:5]
    assert any('<ops of space compat_b>' in s for s in b), b[:5]
    assert not any('compat_b>' in s for s in a) and not any('compat_a>' in s for s in b)
    # and B's page, its client graphs drawn against A's (each frame with its delta)
    page = os.path.join(workdir, 'compat-flamegraphs', 'diff.html')
    assert 'wrote %s: the flame graphs drawn against A' % page in out
    with open(page) as f:
        text = f.read()
    assert '"against":"A"' in text and '"against_samples":' in text and '"delta":' in text


def test_without_py_spy_compat_says_so_in_one_line_and_goes_on(tmpdir):
    # PATH without py-spy, and interpreters with none beside them: shell wrappers
    # in a directory of their own that run the real ones
    workdir = str(tmpdir)
    wrappers = []
    for name, real in (('python-a', PY27), ('python-b', PY311)):
        path = os.path.join(workdir, name)
        with open(path, 'w') as f:
            f.write('#!/bin/sh\nexec "%s" "$@"\n' % real)
        os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
        wrappers.append(path)
    env_path = os.pathsep.join(d for d in os.environ.get('PATH', '').split(os.pathsep)
                               if not os.access(os.path.join(d, 'py-spy'), os.X_OK))
    old = os.environ.get('PATH')
    os.environ['PATH'] = env_path
    try:
        rc, out, err, rows = compat(['--python', wrappers[0], '--python', wrappers[1],
                                     '--rounds', '1', '--ops', '2000'], workdir)
    finally:
        os.environ['PATH'] = old
    assert 'verdict:' in out, out + err
    (line,) = [l for l in err.splitlines() if 'no flame graphs' in l]
    assert 'py-spy' in line and 'Traceback' not in err
    assert not os.path.exists(os.path.join(workdir, 'compat-flamegraphs'))
    assert 'client CPU, A against B' not in out


def test_schema_cache_keyed_by_bytes_fails_rows_6_and_7(tmpdir):
    workdir = str(tmpdir)
    broken_main = os.path.join(workdir, 'broken_main.py')
    with open(broken_main, 'w') as f:
        f.write(BROKEN_MAIN)
    wrapper = os.path.join(workdir, 'python-broken')
    with open(wrapper, 'w') as f:
        f.write('#!/bin/sh\nif [ "$1" = "-m" ] && [ "$2" = "gloaddriver" ]; then\n'
                '  shift 2; exec "%s" "%s" "$@"\nfi\nexec "%s" "$@"\n' % (PY311, broken_main, PY311))
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IEXEC)
    rc, out, err, rows = compat(['--python', PY27, '--python', wrapper], workdir)
    assert rc == 1, out + err
    assert rows['6']['verdict'] == 'FAIL' and rows['7']['verdict'] == 'FAIL', out
    assert 'schema' in rows['6']['why'] and 'keyed by bytes' in rows['6']['why']
    assert '2.000' in rows['6']['B']
    # what does not depend on the cache still agrees
    for n in ('2', '3', '9', '10'):
        assert rows[n]['verdict'] == 'PASS', rows[n]


def test_postgres_pair_passes(tmpdir):
    workdir = str(tmpdir)
    rc, out, err, rows = compat(['--python', PY27, '--python', PY311, '--backend', 'postgres'],
                                workdir)
    assert rc == 0, out + err
    for n in ('2', '3', '4', '5', '9', '10'):
        assert rows[n]['verdict'] == 'PASS', rows[n]
    assert rows['6']['verdict'] == 'N/A' and rows['8']['verdict'] == 'N/A'


def test_the_orm_workload_passes_on_27_with_sqlalchemy_14_and_311_with_2x(tmpdir):
    # SQLAlchemy 1.4 on 2.7 and 2.x on 3.11 store the same families under the same ids
    # (one greenlet: the same order), read each other's through their own models, and
    # send the same round trips per op.
    workdir = str(tmpdir)
    rc, out, err, rows = compat(['--python', PY27, '--python', PY311, '--backend', 'postgres',
                                 '--workload', 'orm', '--ops', '3000', '--rounds', '1',
                                 '--no-flamegraph'], workdir)
    assert rc == 0, out + err
    assert '(--workload orm)' in out
    for n in ('2', '3', '4', '5', '9', '10'):
        assert rows[n]['verdict'] == 'PASS', rows[n]
    assert rows['3']['A'] == rows['3']['B'] and rows['3']['A'].startswith('4')   # 3 A's a create
    assert rows['7']['verdict'] in ('PASS', 'EXPLAINED'), rows['7']


def test_an_interpreter_that_is_not_there_is_one_clear_line(tmpdir):
    workdir = str(tmpdir)
    rc, out, err, rows = compat(['--python', PY311, '--python', 'python3.99'], workdir)
    assert rc == 3 and 'python3.99' in err and 'not found' in err and 'Traceback' not in err


def test_an_interpreter_that_cannot_run_gloaddriver_is_one_clear_line(tmpdir):
    # -E -S: the 3.11 environment without PYTHONPATH or site-packages (no gloaddriver,
    # no gevent); compat installs nothing into it, it says what to do
    bare = os.path.join(str(tmpdir), 'python-bare')
    with open(bare, 'w') as f:
        f.write('#!/bin/sh\nexec "%s" -E -S "$@"\n' % PY311)
    os.chmod(bare, os.stat(bare).st_mode | stat.S_IEXEC)
    rc, out, err, rows = compat(['--python', PY27, '--python', bare], str(tmpdir))
    assert rc == 3 and 'cannot run gloaddriver' in err and 'Traceback' not in err, err
    assert 'scripts/envs.py ensure' in err and out == ''
