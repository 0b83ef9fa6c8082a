"""``python -m gloaddriver`` end to end against a real Tarantool."""
from __future__ import absolute_import, division, print_function

import os
import subprocess
import sys
import time

import pytest

from gloaddriver.measure import stats
from tests import result_schema
from tests.integration.conftest import (assert_accounted, connect, create_space, run_cli,
                                        started_driver)

PHASES = ['insert', 'select', 'update', 'delete']


def perf_available(result):
    return result['manifest']['syscall_source'] == 'perf_event'


@pytest.mark.parametrize('connector', ['buffered', 'sync'])
def test_seed_scenario_runs_every_phase_and_accounts_every_op(tarantool, space, connector):
    rc, out, err, res = run_cli(['--space', space, '--ops', '2000', '--greenlets', '10',
                                 '--connector', connector], tarantool)
    assert rc == 0, err
    assert [p['name'] for p in res['phases']] == PHASES
    assert_accounted(res)
    for p in res['phases']:
        assert (p['attempted'], p['ok'], p['misses']) == (2000, 2000, 0), p['name']
        assert p['latency_us']['p50'] <= p['latency_us']['p99'] <= p['latency_us']['max']
        assert stats.decode_histogram(p['histogram']).get_total_count() == 2000
    assert 'insert' in out and 'p99us' in out and 'Traceback' not in err
    m = res['manifest']
    assert m['connector'] == connector and m['msgpack_c_extension'] is True
    assert tarantool.password not in out + err + open_json_text(res)
    net = [p['syscalls']['network_per_op'] for p in res['phases']]
    if perf_available(res):
        if connector == 'sync':
            # tarantool-python: one send and two or three recvs per request
            assert all(2.5 <= n <= 6.0 for n in net), net
        else:
            # 10 greenlets are few callers (AT_ONCE_BELOW): a send per op, the replies
            # read in chunks, so under a receive per op. (Trains: test_connection.)
            assert all(1.0 <= n < 2.0 for n in net), net
            assert all(0.9 <= p['batching']['requests_per_send'] <= 1.0
                       for p in res['phases'])


def open_json_text(res):
    import json
    return json.dumps(res)


# sha1 of the canonical msgpack (str8 for text) of [k, string.printable[k % 100] * 64]
# for k in 0..299: the same bytes on every interpreter.
GOLDEN_300_INSERTS_64 = '42918cb86dda7f1e3830c82fb48bbd8b6eda8450'
DUMP = u"""local parts = {} for _, x in box.space[...]:pairs() do
           parts[#parts + 1] = require('msgpack').encode(x) end
           return require('digest').sha1_hex(table.concat(parts))"""


def test_stored_bytes_are_canonical_and_connectors_read_each_other(tarantool):
    a, b = create_space(tarantool), create_space(tarantool)
    for space, connector in ((a, 'buffered'), (b, 'sync')):
        rc, _out, err, _res = run_cli(['--space', space, '--ops', '300', '--phases', 'insert',
                                       '--connector', connector, '--value-size', '64'], tarantool)
        assert rc == 0, err
    conn = connect(tarantool)
    try:
        digest_a, digest_b = conn.eval(DUMP, a)[0], conn.eval(DUMP, b)[0]
    finally:
        conn.close()
    assert digest_a == GOLDEN_300_INSERTS_64
    if sys.version_info[0] >= 3:
        assert digest_b == digest_a
    else:
        # tarantool-python 0.7 on 2.7 packs 32..255-byte text as the old raw16
        # (da 00 40) instead of str8 (d9 40): same values, other bytes.
        assert digest_b != digest_a
    # each connector reads what the other wrote, value for value
    for space, connector in ((b, 'buffered'), (a, 'sync')):
        rc, _out, err, res = run_cli(['--space', space, '--ops', '300', '--phases', 'select',
                                      '--connector', connector, '--value-size', '64'], tarantool)
        assert rc == 0 and res['phases'][0]['misses'] == 0, err


def test_mix_phase_with_zipfian_keys(tarantool, space):
    rc, out, err, res = run_cli(['--space', space, '--mix', 'select=50,insert=30,update=20',
                                 '--ops', '3000', '--keys', '500', '--distribution', 'zipfian',
                                 '--greenlets', '20'], tarantool)
    assert rc == 0, err
    (phase,) = res['phases']
    assert phase['name'] == 'mix' and set(phase['ops']) == {'select', 'insert', 'update'}
    assert_accounted(res)
    shares = dict((k, v['attempted'] / 3000.0) for k, v in phase['ops'].items())
    assert 0.4 < shares['select'] < 0.6 and 0.2 < shares['insert'] < 0.4
    # inserts of a mix take new keys above --keys, so none collide
    assert phase['ops']['insert']['failed'] == 0


def test_spawn_prints_progress_and_cleans_up(tmpdir):
    # A temp dir of its own: other runs on the machine make servers' dirs in /tmp too.
    tmp = str(tmpdir.mkdir('tmp'))
    rc, out, err, res = run_cli(['--spawn', '--phases', 'insert,select', '--ops', '0',
                                 '--duration', '1.2', '--keys', '1000000',
                                 '--progress', '0.3', '--greenlets', '20'],
                                env={'TMPDIR': tmp})
    assert rc == 0, err
    assert err.count('ops/s') >= 2 and 'syscalls/op' in err
    assert res['manifest']['server']['spawned'] is True
    assert all(1.0 < p['seconds'] < 2.5 for p in res['phases'])
    assert os.listdir(tmp) == []


@pytest.mark.parametrize('extra,loaded', [([], True), (['--no-load'], False)])
def test_a_mix_on_a_spawned_server_loads_its_keys_first_unless_told_not_to(extra, loaded):
    rc, out, err, res = run_cli(['--spawn', '--mix', 'select=80,update=20', '--keys', '2000',
                                 '--ops', '2000', '--greenlets', '5'] + extra)
    assert rc == 0, err
    names = [p['name'] for p in res['phases']]
    mix = res['phases'][-1]
    if loaded:
        # said before the run, as YCSB's load phase: the mix then finds its keys
        assert 'a load phase inserts the 2000 keys' in err and names == ['load', 'mix']
        assert res['phases'][0]['ok'] == 2000 and mix['misses'] == 0
    else:
        assert 'load phase' not in err and names == ['mix']
        assert mix['misses'] > 1000


@pytest.mark.parametrize('args,rc,words', [
    (['--uri', '127.0.0.1:1'], 3, ['127.0.0.1:1', '--spawn']),
    (['--space', 'nope'], 3, ['nope', 'create']),
    (['--greenlets', '-3'], 2, ['--greenlets']),
    (['--mix', 'select=x'], 2, ['whole number']),
    (['--uri', 'tarantool://127.0.0.1:1'], 3, ['127.0.0.1:1', '--spawn']),
    (['--uri', 'http://127.0.0.1:1'], 2, ['tarantool://HOST:PORT']),
    (['--uri', 'admin:secret@127.0.0.1:1'], 2, ['--user', 'GLOADDRIVER_PASSWORD']),
    (['--uri', '127.0.0.1:1', '--spawn'], 2, ['--uri and --spawn exclude each other']),
])
def test_bad_input_is_one_line_and_an_exit_code(tarantool, args, rc, words):
    server = None if '--uri' in args else tarantool
    got_rc, out, err, res = run_cli(args + ['--ops', '10'], server)
    assert got_rc == rc, err
    assert 'Traceback' not in err and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err


def test_an_event_loop_gevent_cannot_build_is_one_line():
    rc, out, err, res = run_cli(['--ops', '10'], env={'GEVENT_LOOP': 'no-such-loop'})
    assert rc == 3 and 'Traceback' not in err and len(err.strip().splitlines()) == 1, err
    assert 'GEVENT_LOOP=no-such-loop' in err


@pytest.mark.parametrize('connector', ['buffered', 'sync'])
def test_wrong_password(tarantool, connector):
    rc, out, err, res = run_cli(['--ops', '10', '--connector', connector], tarantool,
                                env={'GLOADDRIVER_PASSWORD': 'not-it'})
    assert rc == 3 and 'Traceback' not in err and len(err.strip().splitlines()) == 1, err
    assert 'password' in err.lower() and 'not-it' not in err


@pytest.mark.parametrize('connector', ['buffered', 'sync'])
def test_a_user_given_no_password_is_told_so(tarantool, connector):
    rc, out, err, res = run_cli(['--ops', '10', '--connector', connector], tarantool,
                                env={'GLOADDRIVER_PASSWORD': ''})
    assert rc == 3 and 'Traceback' not in err and len(err.strip().splitlines()) == 1, err
    assert 'which was given no password' in err and 'set GLOADDRIVER_PASSWORD' in err, err


def _finish_cli(p, path):
    """Wait for a run started by _start_cli; (rc, stdout, stderr, JSON or None)."""
    out, err = p.communicate()
    res = None
    if os.path.exists(path):
        with open(path) as f:
            res = result_schema.read(f)
        os.unlink(path)
    return (p.returncode, out.decode('utf-8', 'replace'),
            p.stderr_before + err.decode('utf-8', 'replace'), res)


def _start_cli(server, args):
    """Start a run (conftest.started_driver) and return (process, JSON path) once its
    phase has run 0.5 s."""
    import tempfile
    path = tempfile.mktemp(suffix='.json')
    p = started_driver(['--uri', server.uri, '--user', server.user, '--json', path] + args,
                       {'GLOADDRIVER_PASSWORD': server.password})
    return p, path


@pytest.mark.parametrize('connector', ['buffered', 'sync'])
def test_server_killed_mid_run_errors_counted_then_reconnects(tarantool_own, connector):
    server = tarantool_own
    p, path = _start_cli(server, ['--phases', 'select', '--ops', '0', '--duration', '4',
                                  '--timeout', '1', '--greenlets', '10', '--connector', connector,
                                  '--space', 'gloaddriver'])
    time.sleep(1.0)
    server.kill()
    time.sleep(1.0)
    server.restart()
    rc, out, err, res = _finish_cli(p, path)
    assert rc == 1, err
    assert 'Traceback' not in err and 'failed' in err
    assert_accounted(res)
    (phase,) = res['phases']
    assert phase['errors'].get('network', 0) > 0
    assert phase['ok'] > 0
    if connector == 'buffered':
        assert phase['connection']['reconnects'] >= 1
    # ops kept succeeding after the restart: the last second was not all errors
    assert 3.5 < phase['seconds'] < 6


def test_server_gone_for_good_aborts_at_the_outage_limit(tarantool_own):
    server = tarantool_own
    p, path = _start_cli(server, ['--phases', 'select,update', '--ops', '0', '--duration', '60',
                                  '--timeout', '0.5', '--outage-limit', '1.5',
                                  '--space', 'gloaddriver'])
    time.sleep(0.5)
    t0 = time.time()
    server.kill()
    rc, out, err, res = _finish_cli(p, path)
    assert time.time() - t0 < 15
    assert rc == 1 and 'aborted' in err and 'Traceback' not in err, err
    assert res['aborted'] and ('no successful op' in res['aborted'] or
                               'giving up' in res['aborted']), res['aborted']
    assert_accounted(res)


def test_one_greenlet_waits_for_its_replies_without_a_loop_pass_per_op(tarantool, space):
    # A send, a poll and a recv per op: the hub's pass (epoll_wait and the fork check's
    # getpid, one each per op before) comes only for its turns and slow replies.
    rc, out, err, res = run_cli(['--space', space, '--ops', '3000', '--phases', 'insert,select',
                                 '--greenlets', '1'], tarantool)
    assert rc == 0, err
    assert_accounted(res)
    if not perf_available(res):
        pytest.skip('no perf_event counters here: ' + str(res['manifest'].get('syscall_source')))
    for p in res['phases']:
        counts, n = p['syscalls']['counts'], p['attempted']
        assert counts.get('getpid', 0) / n < 0.6, (p['name'], counts)
        assert counts.get('poll', 0) / n > 0.3, (p['name'], counts)
        assert p['syscalls']['per_op'] < 3.8, (p['name'], p['syscalls'])


def test_without_perf_counters_the_report_says_lower_bound(tarantool, space):
    rc, out, err, res = run_cli(['--space', space, '--ops', '1000', '--phases', 'insert',
                                 '--no-syscalls', '--greenlets', '20'], tarantool)
    assert rc == 0, err
    (phase,) = res['phases']
    block = phase['syscalls']
    assert block['source'] == 'io_calls' and block['lower_bound'] is True
    assert 0 < block['per_op'] <= 2.0
    assert 'LOWER BOUND' in out and 'perf_event' not in out.split('\n')[-2]


def test_both_reply_readers_read_the_same_results_and_the_manifest_says_which(tarantool):
    sums = {}
    for reader, env in (('compiled', None), ('msgpack', {'GLOADDRIVER_PURE_PYTHON': '1'})):
        space = create_space(tarantool)
        rc, out, err, res = run_cli(['--space', space, '--ops', '3000', '--greenlets', '20',
                                     '--checksum'], tarantool, env=env)
        assert rc == 0, err
        assert_accounted(res)
        assert res['manifest']['reply_reader'] == reader
        assert all(p['ok'] == 3000 for p in res['phases'])
        sums[reader] = [p['checksum'] for p in res['phases']]
    # Sums of what was read (a reader that dropped the bodies would sum to zero alike).
    assert all(s != '0' * 16 for s in sums['compiled']), sums
    assert sums['compiled'] == sums['msgpack'], sums


def test_manifest_names_what_the_result_was_measured_with(tarantool, space):
    # the password comes as a flag here (not from the environment) and must
    # show up nowhere: not in the report, the progress lines, nor the JSON
    rc, out, err, res = run_cli(['--space', space, '--ops', '500', '--phases', 'insert,select',
                                 '--warmup', '0.3', '--seed', '7', '--progress', '0.1',
                                 '--password', tarantool.password],
                                tarantool, env={'GLOADDRIVER_PASSWORD': ''})
    assert rc == 0, err
    m = res['manifest']
    assert m['interpreter'].startswith('CPython %d.%d' % sys.version_info[:2])
    for dep in ('gevent', 'greenlet', 'msgpack', 'tarantool', 'hdrhistogram'):
        assert m['dependencies'][dep], dep
    assert m['gevent_loop'].startswith('gevent.') and m['seed'] == 7
    assert m['connector'] == 'buffered' and m['backend'] == 'tarantool'
    assert m['warmup_seconds'] == 0.3 and '***' in m['argv']
    assert m['server']['version'] and m['server']['version'][0].isdigit()
    assert tarantool.password not in out + err + open_json_text(res)


def test_stalled_server_ops_time_out_and_are_counted(tarantool_own):
    server = tarantool_own
    p, path = _start_cli(server, ['--phases', 'select', '--ops', '0', '--duration', '3',
                                  '--timeout', '0.3', '--greenlets', '10',
                                  '--space', 'gloaddriver'])
    time.sleep(0.5)
    server.pause()
    time.sleep(1.0)
    server.resume()
    rc, out, err, res = _finish_cli(p, path)
    assert rc == 1, err
    assert_accounted(res)
    (phase,) = res['phases']
    assert phase['timed_out'] >= 10 and phase['errors']['timeout'] == phase['timed_out']
    assert phase['connection']['late'] >= 1
    assert 'timeout' in out


def test_console_script_and_version():
    exe = os.path.join(os.path.dirname(sys.executable), 'gloaddriver')
    if not os.path.exists(exe):
        pytest.skip('not installed as a package here (%s missing)' % exe)
    out = subprocess.check_output([exe, '--version'], stderr=subprocess.STDOUT)
    assert out.decode().startswith('gloaddriver ')


@pytest.mark.parametrize('name', sorted(__import__('gloaddriver.config.profile', fromlist=['x'])
                                        .available()))
def test_every_profile_runs_at_a_small_size(name):
    small = ['--ops', '400', '--keys', '400', '--greenlets', '10']
    if 'bulk' in name:
        small += ['--rows', '200']
    rc, out, err, res = run_cli(['--profile', name] + small)
    assert rc == 0, err
    assert_accounted(res)
    assert res['phases'] and all(p['ok'] == p['attempted'] for p in res['phases'])
    assert res['manifest']['server']['spawned'] is True


def test_open_loop_holds_the_rate_and_the_corrected_latency_shows_a_stall(tarantool_own):
    server = tarantool_own
    p, path = _start_cli(server, ['--phases', 'insert', '--ops', '0', '--duration', '4',
                                  '--keys', '100000000', '--rate', '5000', '--greenlets', '10',
                                  '--space', 'gloaddriver'])
    time.sleep(1.0)
    server.pause()
    time.sleep(1.0)
    server.resume()
    rc, out, err, res = _finish_cli(p, path)
    assert rc == 0, err
    assert_accounted(res)
    (phase,) = res['phases']
    rate = phase['rate']
    assert rate['target'] == 5000 and abs(rate['achieved'] - 5000) / 5000 < 0.05, rate
    assert rate['late'] > 1000 and rate['dropped'] == 0
    # ~5000 ops were due during the 1 s pause: from their intended start they
    # waited for it; only the 10 in flight saw it in their service time.
    assert phase['latency_us']['p999'] > 500000, phase['latency_us']
    assert phase['service_time_us']['p999'] < 200000, phase['service_time_us']
    assert 'coordinated omission corrected' in out


def test_latency_limit_drops_ops_that_are_too_late(tarantool_own):
    server = tarantool_own
    p, path = _start_cli(server, ['--phases', 'insert', '--ops', '0', '--duration', '3',
                                  '--keys', '100000000', '--rate', '2000', '--greenlets', '5',
                                  '--latency-limit', '50', '--space', 'gloaddriver'])
    time.sleep(0.5)
    server.pause()
    time.sleep(0.8)
    server.resume()
    rc, out, err, res = _finish_cli(p, path)
    (phase,) = res['phases']
    assert_accounted(res)
    assert phase['rate']['dropped'] > 500
    assert phase['rate']['scheduled'] == phase['attempted'] + phase['rate']['dropped']


def test_duration_alone_runs_each_phase_for_that_long():
    """--duration S without --ops: the time ends the phase, not the default op limit."""
    rc, _out, err, res = run_cli(['--spawn', '--duration', '3', '--phases', 'insert',
                                  '--greenlets', '4'])
    assert rc == 0, err
    assert_accounted(res)
    (p,) = res['phases']
    assert p['seconds'] >= 2.5, p['seconds']
    assert res['manifest']['ops_per_phase'] == 0      # no op limit was set behind the user's back
    assert p['attempted'] != 100000


def test_fail_if_p95_with_a_bare_number_is_judged_in_milliseconds(tarantool, space):
    rc, out, err, res = run_cli(['--space', space, '--ops', '500', '--phases', 'insert,select',
                                 '--greenlets', '4', '--fail-if', 'p95<2000,select:p95<0.001'],
                                tarantool)
    for p in res['phases']:
        lat = p['latency_us']
        assert lat['p90'] <= lat['p95'] <= lat['p99'], lat   # p95 is in every latency block
        for row in p['timeline']:
            assert 'p95' in row['latency_us']
    v = dict(((x['condition'], x['phase']), x) for x in res['thresholds'])
    loose = v[('p95<2000', 'select')]
    assert loose['unit'] == 'ms' and loose['limit'] == 2000
    # the value is the measured p95 in ms: 2000 would be 2 s if it were read as us
    assert abs(loose['value'] * 1000 - res['phases'][1]['latency_us']['p95']) < 1e-6
    assert loose['held'] and v[('p95<2000', 'insert')]['held']
    tight = v[('select:p95<0.001', 'select')]        # 1 us: no real op is that fast
    assert tight['held'] is False and tight['unit'] == 'ms'
    assert rc == 4, err
    line = [l for l in out.splitlines() if 'threshold p95<2000' in l and 'select' in l][0]
    assert line.rstrip().endswith(' ms') and 'held' in line
    assert 'p95us' in out


def test_every_timeline_row_adds_up_and_the_server_rate_says_what_it_counts(tarantool, space):
    """An op in flight at a tick counts in the row where it ends: ok + errors ==
    attempted in every row, as in the table (once a row's ok exceeded its attempted)."""
    rc, out, err, res = run_cli(['--space', space, '--ops', '20000', '--phases', 'insert,select',
                                 '--greenlets', '20', '--progress', '0.05'], tarantool)
    assert rc == 0, err
    assert_accounted(res)
    rows = [r for p in res['phases'] for r in p['timeline']]
    assert len(rows) >= 4
    for r in rows:
        assert r['ok'] + r['errors'] == r['attempted'], r
    import re
    lines = [l for l in err.splitlines() if re.search(r'\| server [0-9,]+ ', l)]
    assert lines, err      # (a sample late at a tick says so instead of a rate)
    assert all(re.search(r'\| server [0-9,]+ req/s \(all request types', l) for l in lines), \
        lines
