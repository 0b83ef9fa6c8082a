"""The syscall counters count the driver only: a server that a --fault kills and starts
again mid-run is started by the launcher (backends/launcher.py), not by the driver, so
its syscalls stay out of sys/op in the phase of the restart and in the phases after it.

One greenlet makes the per-op syscalls of a run a property of the code, not of the
moment's batching; a server restarted by the driver itself made sys/op 3-6x, and kept
it there for the rest of the run. Reconnecting is the driver's own work (a PostgreSQL
login is hundreds of syscalls), so in the phase of the fault the intervals that overlap
the outage are left out, and the rest of the phase, after the restart, is judged: 4 s
in all, so that a restart slowed by a busy machine (1.5 s was seen) leaves ops enough."""
from __future__ import absolute_import, division, print_function

import pytest

from tests.integration.conftest import assert_accounted, run_cli

RUNS = {
    'tarantool': ['--backend', 'tarantool'],
    'postgres': ['--backend', 'postgres', '--init', '--connector', 'psycopg2'],
}


def _sys_per_op(args):
    rc, out, err, res = run_cli(args + ['--spawn', '--greenlets', '1', '--phases',
                                        'insert,select', '--ops', '0', '--duration', '4',
                                        '--interval', '0.25'])
    assert res is not None and 'Traceback' not in err, err
    assert_accounted(res)
    if res['manifest']['syscall_source'] != 'perf_event':
        pytest.skip('no perf_event syscall counters here: %s' % res['manifest']['syscall_reason'])
    return dict((p['name'], _outside_outages(p)) for p in res['phases']), res


def _outside_outages(phase):
    """Syscalls per op over the phase's intervals that overlap none of its outages
    (each widened by an interval either side)."""
    spans = [(o['start'] - 0.25, (o['end'] if o['end'] is not None else 1e9) + 0.25)
             for o in phase.get('outages') or ()]
    calls = ops = 0
    for r in phase['timeline']:
        lo, hi = r['t'] - r['seconds'], r['t']
        if any(lo < b and hi > a for a, b in spans):
            continue
        calls += r['syscalls']
        ops += r['attempted']
    assert ops > 1000, ('too little of the phase outside its outages', phase['outages'])
    return calls / ops


@pytest.mark.parametrize('backend', sorted(RUNS))
def test_a_restarted_server_is_not_counted_as_the_driver(backend):
    quiet, _ = _sys_per_op(RUNS[backend])
    faulted, res = _sys_per_op(RUNS[backend] + ['--fault', 'kill@0.8s,start@1.3s'])
    assert [f['action'] for f in res['faults']] == ['kill', 'start'], res['faults']
    assert res['phases'][0]['outages'], 'the kill made no outage: nothing was tested'
    for name in ('insert', 'select'):
        assert abs(faulted[name] - quiet[name]) <= 0.15 * quiet[name], (name, quiet, faulted)
