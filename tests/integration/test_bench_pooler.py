"""scripts/bench pooler still runs end to end (tiny sizes: a smoke test, no speed
asserted), and leaves no pgbouncer or HAProxy behind."""
from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import subprocess
import sys
import tempfile

from tests.integration.conftest import ROOT


def _fronts_running(root):
    """The pgbouncer and haproxy processes of this machine that run from a directory
    under ``root``: the bench's own (another interpreter's suite may run pgbouncers of
    its own beside it, in their own directories)."""
    out = set()
    for pid in os.listdir('/proc'):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                argv = f.read().decode('utf-8', 'replace').split('\x00')
        except (IOError, OSError):
            continue
        if os.path.basename(argv[0]) in ('pgbouncer', 'haproxy') and \
                any(a.startswith(root) for a in argv):
            out.add(int(pid))
    return out


def test_bench_pooler_table_and_json(tmpdir):
    path = str(tmpdir.join('p.json'))
    # The bench's servers make their directories here (TMPDIR): a folder of its own,
    # which the members' unprivileged user can go through.
    root = tempfile.mkdtemp(prefix='gloaddriver-bench-pooler-test-')
    os.chmod(root, 0o755)
    try:
        p = subprocess.Popen([sys.executable, os.path.join(ROOT, 'scripts', 'bench_pooler.py'),
                              '--ops', '1000', '--keys', '500', '--rounds', '1', '--greenlets',
                              '8', '--out', path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE,
                             env=dict(os.environ, PYTHONPATH=ROOT, TMPDIR=root), cwd=ROOT)
        out, err = p.communicate()
        left = _fronts_running(root)
        left_dirs = os.listdir(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert p.returncode == 0, err.decode('utf-8', 'replace')[-3000:]
    data = json.load(open(path))
    rows = [(t['connector'], t['path']) for t in data['table']]
    assert rows == [('psycopg2', 'direct'), ('psycopg2', 'haproxy'),
                    ('psycopg2', 'pgbouncer session'), ('psycopg2', 'pgbouncer transaction'),
                    ('pipelined', 'direct'), ('pipelined', 'haproxy'),
                    ('pipelined', 'pgbouncer session')], rows
    assert all(t['ratio'] > 0 for t in data['table'])
    assert [t['ratio'] for t in data['table'] if t['path'] == 'direct'] == [1.0, 1.0]
    assert all(r['failed'] == 0 for r in data['runs'])
    assert 'vs direct' in out.decode('utf-8')
    # Whatever else runs beside it, none of the bench's own is left, nor its folders.
    assert not left and not left_dirs, (left, left_dirs)
