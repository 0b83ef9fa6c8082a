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
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    out, err = p.communicate()
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
