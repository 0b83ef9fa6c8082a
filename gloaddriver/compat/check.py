"""``gloaddriver compat``: the same seeded run on two interpreters, side by side.

Each interpreter (found and proven able to run this gloaddriver by
compat/interpreters.py) runs the gloaddriver it imports, against one private server,
each into its own space, with the same seed, keys, values, op order and
concurrency. Then eleven checks, each a row with both sides and a verdict:
PASS, FAIL, or EXPLAINED (a known difference, listed rather than hidden).
Exit 0 only when no check fails.

The rows that follow the machine's load (7 syscalls, 8 batching, 11 throughput)
judge medians over ``--rounds`` runs of each side, taken in turns (A B, B A, A B,
...), so that load on the machine lands on both sides rather than on one.
"""
from __future__ import absolute_import, division, print_function

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

from gloaddriver import backends, converters, errors
from gloaddriver.compat.interpreters import runs_gloaddriver
from gloaddriver.measure.repeats import median
from gloaddriver.report.results import differential_page, flamegraph_moves
from gloaddriver.run.sampler import find_tool


BATCH_TOLERANCE = 0.5   # batch sizes within 1.5x of each other are load, not a difference
# One per batch: their rate per op follows the batching (row 8), so within 1.5x they
# are explained by it and judged beyond.
BATCHED_CALLS = ('sendto', 'recvfrom', 'sendmsg', 'recvmsg', 'send', 'recv', 'read', 'write')

# Syscalls whose rate may differ for reasons we know: listed as EXPLAINED with
# their cause; the total less these must still agree within the tolerance.

KNOWN_SYSCALL_CAUSES = {
    'getsockopt': "gevent's sendall adds one per call",
    'getpid': "gevent's fork check runs once per loop iteration: it follows the batching",
    'epoll_wait': 'one per loop iteration: it follows the batching',
    'epoll_ctl': "psycogreen's wait callback registers a new watcher per wait",
    'futex': "a second thread (gevent's resolver pool) makes 2.7's GIL hand off",
    # Seen here: 3.11 and 3.13 map and unmap memory as batches come and go;
    # 2.7 and 3.7 mostly grow the heap with brk.
    'brk': 'the memory allocator grows or shrinks the heap',
    'mmap': 'the memory allocator maps memory as load comes and goes',
    'munmap': 'the memory allocator returns idle memory',
    'madvise': 'the memory allocator',
    'mprotect': 'the memory allocator',
}
NOISE_PER_OP = 0.01     # rates below this on both sides are not compared
# Syscalls a phase makes once at its edges that the named counters leave out (reading
# /proc for the CPU figures, the first and last samples, the phase's connections):
# measured on the orm workload, 2.7 made some 60 more than 3.11 a phase, 120 against 65.
# Over 10,000 ops that is under the noise floor; over 3,000 it is not, yet says nothing
# of the ops.
PHASE_EDGE_SYSCALLS = 150
# Where the flame graphs and their differential go unless --flamegraph says: each run
# of compat answers "where did B's CPU go that A's did not" without being asked.
FLAMEGRAPH_DIR = 'compat-flamegraphs'


# -- one side -------------------------------------------------------------------------

class Side(object):
    def __init__(self, label, exe):
        self.label = label
        self.exe = exe
        self.space = 'compat_%s' % label.lower()
        self.typed = 'compat_typed_%s' % label.lower()
        self.probe = None
        self.result = None
        self.timed = None    # the medians of the timing rounds (rows 7, 8, 11)
        self.rounds = []
        self.cross = None
        self.stored = None


def median_result(results):
    """One result whose timing figures are the medians of several runs of the same
    ops: per phase ops/s, client CPU per op, each syscall count, requests per send and
    responses per recv. Everything else is the first run's."""
    out = dict(results[0], phases=[])
    for i, first in enumerate(results[0]['phases']):
        same = [r['phases'][i] for r in results]
        p = dict(first, ops_per_sec=median([x['ops_per_sec'] or 0 for x in same]))
        cpu = [x.get('cpu_us_per_op') for x in same]
        p['cpu_us_per_op'] = median(cpu) if all(c is not None for c in cpu) else None
        counts = [x['syscalls'].get('counts') or {} for x in same]
        p['syscalls'] = dict(first['syscalls'], counts=dict(
            (k, median([c.get(k, 0) for c in counts])) for k in set(k for c in counts for k in c)))
        p['batching'] = dict(first['batching'], **dict(
            (k, median([x['batching'].get(k) or 0 for x in same]))
            for k in ('requests_per_send', 'responses_per_recv')))
        out['phases'].append(p)
    return out


def _env(target=None):
    """A side's environment: this command's own (which gloaddriver each side imports
    follows it), with the private server's password when there is one."""
    env = dict(os.environ)
    if target is not None:
        env['GLOADDRIVER_PASSWORD'] = target.password
    return env


def _probe(side, target, args):
    a = dict(args, **target.probe_args())
    p = subprocess.Popen([side.exe, '-m', 'gloaddriver.compat.probe', json.dumps(a)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(target))
    out, err = p.communicate()
    if p.returncode != 0:
        raise errors.SetupError('probe on %s failed: %s' % (side.exe, err.decode()[-400:]))
    return json.loads(out.decode().strip().splitlines()[-1])


def _drive(side, target, opts, space=None, flamegraph=None):
    fd, path = tempfile.mkstemp(suffix='.json')
    os.close(fd)
    common = ['--greenlets', str(opts.greenlets), '--ops', str(opts.ops), '--seed', str(opts.seed),
              '--checksum', '--progress', '0', '--json', path]
    # A warm-up runs for a time, not a count: where its ops store rows (the orm
    # workload's creates), the two sides would store different numbers of them.
    common += ['--warmup', '0.3' if opts.workload == 'kv' else '0']
    if opts.workload == 'kv':    # another workload brings its own phases (target_argv)
        common += ['--phases', 'insert,select,update', '--value-size', str(opts.value_size)]
    if flamegraph:
        common += ['--flamegraph', os.path.join(flamegraph, side.label)]
    argv = [side.exe, '-m', 'gloaddriver'] + target.target_argv(space or side.space) + common
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(target))
    out, err = p.communicate()
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError:
        raise errors.SetupError('the run on %s wrote no result (exit %d): %s'
                          % (side.exe, p.returncode, err.decode()[-400:]))
    finally:
        os.unlink(path)


# -- the checks ------------------------------------------------------------------------

def _fp(side):
    f = side.probe['fingerprint']
    d = f['dependencies']
    return '%s, gevent %s, greenlet %s, msgpack %s%s, tarantool %s, psycopg2 %s, loop %s' % (
        f['interpreter'], d.get('gevent'), d.get('greenlet'), d.get('msgpack'),
        '' if f['msgpack_c_extension'] else ' (PURE PYTHON)', d.get('tarantool'),
        d.get('psycopg2-binary'),
        f['gevent_loop'].rsplit('.', 2)[-2] if '.' in f['gevent_loop'] else f['gevent_loop'])


def _sum(result, key):
    return sum(p[key] for p in result['phases'])


def _per_op_syscalls(result):
    att = _sum(result, 'attempted')
    counts = {}
    for p in result['phases']:
        for k, v in (p['syscalls'].get('counts') or {}).items():
            counts[k] = counts.get(k, 0) + v
    return dict((k, v / att) for k, v in counts.items()), result['phases'][0]['syscalls']['source']


def checks(a, b, tolerance, not_applicable=None):
    """The eleven rows of the verdict, one function each below. A check the connector
    cannot support (it keeps no request counts, say) is N/A, for the reason
    ``not_applicable`` gives."""
    rows = []
    na = not_applicable or {}

    def row(name, va, vb, verdict, why=''):
        rows.append({'check': name, 'A': va, 'B': vb, 'verdict': verdict, 'why': why})

    # A connector without its own counts (no 'connection' block) has no request or
    # batching figures to compare.
    uncounted = any('connection' not in s.result['phases'][0] for s in (a, b))
    _fingerprint(a, b, row)
    _wire_bytes(a, b, row)
    _stored_bytes(a, b, row)
    _typed_fields(a, b, row)
    _cross_read(a, b, row)
    same_requests = _requests_per_op(a, b, row, uncounted, na)
    # A send or recv per op follows the batching only while both sides make the same
    # requests per op: a side that makes more (a schema cache that misses) makes more
    # sends for that, which batches of another size must not excuse.
    _syscalls_per_op(a, b, row, tolerance,
                     BATCHED_CALLS if uncounted or same_requests else ())
    _batching(a, b, row, tolerance, uncounted, na)
    _checksums(a, b, row)
    _errors_by_kind(a, b, row)
    _throughput(a, b, row)
    return rows


def _timed(s):
    """The medians of a side's timing rounds (rows 7, 8, 11), or its one run."""
    return s.timed or s.result


def _fingerprint(a, b, row):
    pure = [s.label for s in (a, b) if not s.probe['fingerprint']['msgpack_c_extension']]
    row('1 fingerprint', _fp(a), _fp(b), 'FAIL' if pure else 'PASS',
        'msgpack runs its pure-Python fallback on %s (several times slower): install its C '
        'extension'
        % ' and '.join(pure) if pure else '')


def _wire_bytes(a, b, row):
    wa, wb = a.probe['wire'], b.probe['wire']
    diff = [la for (la, ha), (lb, hb) in zip(wa, wb) if ha != hb]
    digest = lambda w: hashlib.sha1(''.join(h for _l, h in w).encode()).hexdigest()[:12]
    row('2 wire bytes', '%d values, sha1 %s' % (len(wa), digest(wa)),
        '%d values, sha1 %s' % (len(wb), digest(wb)), 'FAIL' if diff or len(wa) != len(wb) else 'PASS',
        'different request bytes for: %s' % ', '.join(diff) if diff else '')


def _stored_bytes(a, b, row):
    row('3 stored bytes', '%d tuples, sha1 %s' % (a.stored[0], a.stored[1][:12]),
        '%d tuples, sha1 %s' % (b.stored[0], b.stored[1][:12]),
        'PASS' if a.stored == b.stored else 'FAIL',
        '' if a.stored == b.stored else 'the two runs stored different tuples')


def _typed_fields(a, b, row):
    ta = ', '.join('%s' % o for _l, o in a.probe['typed'])
    tb = ', '.join('%s' % o for _l, o in b.probe['typed'])
    tdiff = [l for (l, oa), (_l, ob) in zip(a.probe['typed'], b.probe['typed']) if oa != ob]
    row('4 typed fields', ta, tb, 'FAIL' if tdiff else 'PASS',
        'accepted on one side only: %s' % ', '.join(tdiff) if tdiff else '')


def _cross_read(a, b, row):
    def cross(s):
        c = s.cross
        return '%d rows, %d mismatches, text %s, binary %s, text key %s, native str key %s' % (
            c['rows'], c['n_mismatches'], 'ok' if c['text_ok'] else 'NOT TEXT',
            'ok' if c['binary_ok'] else 'NOT BYTES', c['text_key'], c['native_str_key'])
    bad = [s.label for s in (a, b) if s.cross['n_mismatches'] or not s.cross['text_ok'] or
           not s.cross['binary_ok'] or s.cross['text_key'] != 'hit' or
           s.cross['rows'] != _other(s, a, b).stored[0]]
    native = [s for s in (a, b) if s.cross['native_str_key'] != 'hit']
    if bad:
        row('5 cross-read', cross(a), cross(b), 'FAIL', 'reading the other side\'s data failed '
            'on %s' % ' and '.join(bad))
    elif native:
        row('5 cross-read', cross(a), cross(b), 'EXPLAINED',
            'on %s the native str is binary (msgpack bin), and gloaddriver\'s model keeps it so: '
            'text is unicode there. A key given as a native str misses a string index; give it '
            'as unicode' % ' and '.join(s.probe['fingerprint']['interpreter'] for s in native))
    else:
        row('5 cross-read', cross(a), cross(b), 'PASS')


def _other(s, a, b):
    return b if s is a else a


def _requests_per_op(a, b, row, uncounted, na):
    """Row 6, requests per op and schema fetches; True when both sides make the same
    requests per op (or neither counts them)."""
    if uncounted:
        row('6 requests per op', 'n/a', 'n/a', 'N/A', na.get(
            '6 requests per op', 'the connector keeps no request counts'))
        return True

    def reqs(s):
        att = _sum(s.result, 'attempted')
        req = sum(p['connection']['requests'] for p in s.result['phases'])
        fetch = sum(p['connection']['schema_fetches'] for p in s.result['phases'])
        return req / att, fetch
    (ra, fa), (rb, fb) = reqs(a), reqs(b)
    why = []
    for s, r, f in ((a, ra, fa), (b, rb, fb)):
        if f:
            why.append('%s re-fetched the schema %d times after warmup (%.2f requests per '
                       'op): its schema cache misses on every op; is it keyed by bytes '
                       'rather than decoded text?' % (s.label, f, r))
    same_requests = abs(ra - rb) <= 0.005
    row('6 requests per op', '%.3f, %d schema fetches' % (ra, fa),
        '%.3f, %d schema fetches' % (rb, fb),
        'FAIL' if why or not same_requests else 'PASS', ' '.join(why))
    return same_requests


def _syscalls_per_op(a, b, row, tolerance, batched):
    """Row 7: medians of the rounds, as rows 8 and 11."""
    (sa, src_a), (sb, src_b) = _per_op_syscalls(_timed(a)), _per_op_syscalls(_timed(b))
    if src_a != 'perf_event' or src_b != 'perf_event':
        row('7 syscalls per op', src_a, src_b, 'FAIL', 'no perf_event counters: cannot compare')
        return
    verdict, notes, worst = 'PASS', [], []
    # What the phases cost once at their edges is left in the remainder, spread over
    # their ops: a gap smaller than that is not a difference per op, whatever its ratio.
    ops = min(_sum(_timed(a), 'attempted'), _sum(_timed(b), 'attempted'))
    edge_floor = max(NOISE_PER_OP, PHASE_EDGE_SYSCALLS * len(_timed(a)['phases']) /
                     float(max(ops, 1)))
    known_a = sum(v for k, v in sa.items() if k in KNOWN_SYSCALL_CAUSES or k in batched)
    known_b = sum(v for k, v in sb.items() if k in KNOWN_SYSCALL_CAUSES or k in batched)
    for name in sorted(set(sa) | set(sb)):
        x, y = sa.get(name, 0.0), sb.get(name, 0.0)
        if name == 'total':
            # What the known causes do not explain must agree.
            x, y = x - known_a, y - known_b
            label = 'total less known causes'
        else:
            label = name
        if name in KNOWN_SYSCALL_CAUSES:
            # Listed, not judged: a ratio says nothing when one side makes
            # none (0 vs 0.01 per op). What they do not explain is judged
            # in the "total less known causes" row.
            if abs(x - y) > 0.0005 and abs(x - y) / max(x, y) > 0.05:
                notes.append('%s %.4f vs %.4f (%s)' % (name, x, y, KNOWN_SYSCALL_CAUSES[name]))
                verdict = 'EXPLAINED' if verdict == 'PASS' else verdict
            continue
        if max(x, y) < NOISE_PER_OP:
            continue
        if name == 'total' and abs(x - y) < edge_floor:
            continue
        ratio = max(x, y) / max(min(x, y), 1e-9)
        if name in batched and tolerance / 100.0 < ratio - 1 <= BATCH_TOLERANCE:
            notes.append('%s %.4f vs %.4f (one per batch: it follows the batching)'
                         % (name, x, y))
            verdict = 'EXPLAINED' if verdict == 'PASS' else verdict
            continue
        if ratio - 1 > max(tolerance / 100.0, BATCH_TOLERANCE if name in batched else 0):
            worst.append('%s %.3f vs %.3f per op (%.2fx%s)' % (
                label, x, y, ratio, ', at least 1.5x' if ratio >= 1.5 else ''))
            verdict = 'FAIL'
    fmt = lambda s: 'total %.3f, net %.3f' % (s.get('total', 0), sum(
        s.get(k, 0) for k in ('sendto', 'recvfrom', 'sendmsg', 'recvmsg')))
    row('7 syscalls per op', fmt(sa), fmt(sb), verdict,
        '; '.join(worst + notes) if (worst or notes) else '')


def _batching(a, b, row, tolerance, uncounted, na):
    if uncounted:
        row('8 batching (req/send, resp/recv)', 'n/a', 'n/a', 'N/A', na.get(
            '8 batching (req/send, resp/recv)', 'the connector keeps no batching counts'))
        return

    def batch(s):
        return [(p['name'], p['batching'].get('requests_per_send') or 0,
                 p['batching'].get('responses_per_recv') or 0) for p in _timed(s)['phases']]
    ba, bb = batch(a), batch(b)
    # A batch is what one loop pass of the hub gathers: how many callers that pass
    # wakes follows the machine's load of the moment, so batch sizes within 1.5x are
    # explained; a connector that stopped batching on one side is 10x and more off.
    def batch_ratio(x, y):
        return max(x, y) / max(min(x, y), 1e-9) if max(x, y) else 1.0
    pairs = [(n, what, x, y) for (n, r1, s1), (_n, r2, s2) in zip(ba, bb)
             for what, x, y in (('req/send', r1, r2), ('resp/recv', s1, s2))]
    off = ['%s %s %.1f vs %.1f' % p for p in pairs
           if batch_ratio(p[2], p[3]) - 1 > max(tolerance / 100.0, BATCH_TOLERANCE)]
    moved = ['%s %s %.1f vs %.1f' % p for p in pairs
             if tolerance / 100.0 < batch_ratio(p[2], p[3]) - 1 <= BATCH_TOLERANCE]
    fmt_b = lambda bs: ', '.join('%s %.1f/%.1f' % x for x in bs)
    if off:
        row('8 batching (req/send, resp/recv)', fmt_b(ba), fmt_b(bb), 'FAIL', '; '.join(off))
    elif moved:
        row('8 batching (req/send, resp/recv)', fmt_b(ba), fmt_b(bb), 'EXPLAINED',
            'within 1.5x: a batch is what one loop pass gathers, which the machine\'s '
            'load moves (%s)' % '; '.join(moved))
    else:
        row('8 batching (req/send, resp/recv)', fmt_b(ba), fmt_b(bb), 'PASS', '')


def _checksums(a, b, row):
    def sums(s):
        return [(p['name'], p['checksum'], p['ok'], p['misses']) for p in s.result['phases']]
    ca, cb = sums(a), sums(b)
    cdiff = [x[0] for x, y in zip(ca, cb) if x != y]
    fmt_c = lambda cs: ', '.join('%s %s ok %d miss %d' % (n, c[-8:], o, m) for n, c, o, m in cs)
    row('9 result checksums, row counts', fmt_c(ca), fmt_c(cb), 'FAIL' if cdiff else 'PASS',
        'results differ in: %s' % ', '.join(cdiff) if cdiff else '')


def _errors_by_kind(a, b, row):
    ea, eb = a.probe['errors'], b.probe['errors']
    fmt_e = lambda e: ', '.join('%s x%d' % kv for kv in sorted(e.items()))
    row('10 errors by kind', fmt_e(ea), fmt_e(eb), 'PASS' if ea == eb else 'FAIL',
        '' if ea == eb else 'the same failing ops failed differently')


def _throughput(a, b, row):
    """Row 11: ops/s and their ratio, judged by the client CPU per op.

    At 100 greenlets the client is the bottleneck, so its ops/s is the share of a core it
    got divided by its CPU per op: other work on the machine moves the first, not the
    second. A missing C extension or a profiler left on shows in the CPU per op (3x and
    more); ops/s judge only a result without CPU figures."""
    pa, pb = _timed(a)['phases'], _timed(b)['phases']
    ta_, tb_ = [p['ops_per_sec'] for p in pa], [p['ops_per_sec'] for p in pb]
    ca, cb = [p.get('cpu_us_per_op') for p in pa], [p.get('cpu_us_per_op') for p in pb]
    by_cpu = all(ca + cb)
    xs, ys = (ca, cb) if by_cpu else (ta_, tb_)
    worst = max([max(x, y) / max(min(x, y), 1e-9) for x, y in zip(xs, ys)] or [1])
    fmt_t = lambda ts, cs: ', '.join('{:,}'.format(int(t)) + (' (%.1f us/op)' % c if by_cpu else '')
                                     for t, c in zip(ts, cs))
    row('11 throughput ops/s (B/A)', fmt_t(ta_, ca), fmt_t(tb_, cb) + ' (%s)' % ', '.join(
        '%.2fx' % (y / x) for x, y in zip(ta_, tb_)),
        'FAIL' if worst >= 3 else 'PASS',
        'a %.1fx gap in %s: likely a missing C extension or a profiler left on'
        % (worst, 'client CPU per op' if by_cpu else 'ops/s') if worst >= 3 else '')


# -- main -------------------------------------------------------------------------------

def parse(argv):
    ap = converters.WholeFlagsParser(prog='gloaddriver compat', description=__doc__.split('\n')[0])
    ap.add_argument('--python', action='append', required=True,
                    help='an interpreter that runs gloaddriver: a path (a virtualenv\'s '
                         'bin/python, where gloaddriver and its dependencies are installed), '
                         'or a name looked up on PATH (python2.7, 3.13); give two, or one to '
                         'compare with the interpreter running this command')
    ap.add_argument('--backend', choices=backends.names(), default=backends.DEFAULT)
    ap.add_argument('--greenlets', type=int, default=None,
                    help='default: the backend\'s (100 for tarantool, 10 for postgres with a '
                         'pool of as many)')
    ap.add_argument('--workload', choices=('kv', 'orm'), default='kv',
                    help='kv (the default: insert, select, update), or orm (postgres: '
                         'SQLAlchemy\'s ORM, 1.4 on 2.7 and 2.x on 3.x, its create/read mix '
                         'on one greenlet, so both sides store the same rows in the same '
                         'order; needs gloaddriver[sqlalchemy] on both)')
    ap.add_argument('--ops', type=int, default=None,
                    help='ops per phase (default 50000; 3000 for the orm workload)')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--value-size', type=int, default=1536)
    ap.add_argument('--tolerance', type=float, default=15.0,
                    help='percent: how far the syscalls per op (row 7) and the batching (row '
                         '8) of the two sides may differ (row 11 fails at a fixed 3x gap in '
                         'CPU per op)')
    ap.add_argument('--rounds', type=int, default=3,
                    help='runs of each side, in turns, whose medians rows 7, 8 and 11 judge '
                         '(default 3)')
    ap.add_argument('--json', default=None)
    ap.add_argument('--flamegraph', default=None, metavar='DIR',
                    help='sample the first run of each side with py-spy (DIR/A, DIR/B) and '
                         'write where B spent more or less than A: '
                         'DIR/diff.client.<phase>.B.folded (default: %s, when py-spy is there '
                         'for both sides)' % FLAMEGRAPH_DIR)
    ap.add_argument('--no-flamegraph', action='store_true',
                    help='do not sample: no flame graphs, no differential')
    args = ap.parse_args(argv)
    if len(args.python) == 1:   # the other side: the interpreter running this command
        args.python.insert(0, sys.executable)
    if len(args.python) != 2:
        ap.error('give one or two --python interpreters')
    if args.rounds < 1:
        ap.error('--rounds must be 1 or more')
    workloads = getattr(backends.get(args.backend).crosscheck, 'WORKLOADS', ('kv',))
    if args.workload not in workloads:
        ap.error('--workload %s: --backend %s compares %s' % (args.workload, args.backend,
                                                             ', '.join(sorted(workloads))))
    return args


def _choose_flamegraph(opts, sides, say):
    """Sample by default, into FLAMEGRAPH_DIR, when both sides have py-spy; without it,
    one line and the checks go on unsampled. An asked-for --flamegraph DIR is left to
    the runs, which refuse it with their own line if py-spy cannot work."""
    opts.flamegraph_default = False
    if opts.no_flamegraph:
        opts.flamegraph = None
    elif opts.flamegraph is None:
        # the py-spy each side's run would use: beside its interpreter, else on PATH
        missing = [s.exe for s in sides if find_tool('py-spy', s.exe) is None]
        if missing:
            say('no flame graphs: py-spy is not beside %s nor on PATH (pip install '
                '"gloaddriver[profile]" there); the checks go on without them'
                % ' or '.join(missing))
        else:
            opts.flamegraph = os.path.abspath(FLAMEGRAPH_DIR)
            opts.flamegraph_default = True


def _first_run(s, target, opts, say):
    """A side's first, seeded run, sampled when flame graphs are on. When they are on
    by default and the run refuses them (py-spy may not read processes here, or the
    directory cannot be made: said before the first op, so nothing was stored), one
    line, and the run again unsampled."""
    try:
        return _drive(s, target, opts, flamegraph=opts.flamegraph)
    except errors.SetupError as e:
        if not (opts.flamegraph and opts.flamegraph_default and '--flamegraph' in str(e)):
            raise
        say('no flame graphs: %s; the checks go on without them' % e)
        opts.flamegraph = None
        return _drive(s, target, opts)


def _run_sides(sides, target, opts, say):
    """Probe, run and digest each side in turn, then let each read the other's data."""
    for s in sides:
        say('%s: %s' % (s.label, s.exe))
        s.probe = _probe(s, target, {'mode': 'self', 'space': s.space, 'typed': s.typed})
        # The flame graphs on the first run only: the timing rounds stay unsampled.
        s.result = _first_run(s, target, opts, say)
        s.stored = target.digest(s.space)
    for s, other in ((sides[0], sides[1]), (sides[1], sides[0])):
        s.cross = _probe(s, target, {'mode': 'crossread', 'space': other.space,
                                     'typed': other.typed, 'workload': opts.workload,
                                     'value_size': opts.value_size})['crossread']
    # The timing rounds: the same run into fresh spaces, the sides in turns. A sampled
    # first run is not one of them: its driver made ~50 more syscalls a phase on 2.7
    # (0.005 per op at 10,000 ops, none of them named), which failed row 7 now and
    # then; the rounds are then all unsampled, one more run each.
    for s in sides:
        s.rounds = [] if _sampled(s.result) else [s.result]
    r = 1
    while any(len(s.rounds) < opts.rounds for s in sides):
        say('timing round %d of %d' % (min(len(s.rounds) for s in sides) + 1, opts.rounds))
        for s in (sides if r % 2 == 0 else sides[::-1]):
            if len(s.rounds) < opts.rounds:
                s.rounds.append(_drive(s, target, opts, _round_space(s, r)))
        r += 1
    for s in sides:
        s.timed = median_result(s.rounds)


def _round_space(side, r):
    return '%s_r%d' % (side.space, r)


def _sampled(result):
    return any(p.get('flamegraph') for p in result['phases'])


def main(argv):
    opts = parse(argv)
    side_of = backends.get(opts.backend).crosscheck
    greenlets, ops = getattr(side_of, 'WORKLOADS', {'kv': (side_of.GREENLETS, 50000)})[
        opts.workload]
    if opts.greenlets is None:
        opts.greenlets = greenlets
    if opts.ops is None:
        opts.ops = ops

    def say(text):
        sys.stderr.write('compat: %s\n' % text)
        sys.stderr.flush()
    try:
        sides = [Side(label, runs_gloaddriver(spec, _env()))
                 for label, spec in zip('AB', opts.python)]
        _choose_flamegraph(opts, sides, say)
        # a sampled first run is not timed: one more round's spaces (_run_sides)
        rounds = opts.rounds + (1 if opts.flamegraph else 0)
        names = [s.space for s in sides] + [
            _round_space(s, r) for r in range(1, rounds) for s in sides]
        target = side_of.Target(names) if opts.workload == 'kv' else \
            side_of.Target(names, workload=opts.workload)
        try:
            _run_sides(sides, target, opts, say)
        finally:
            target.close()
    except errors.SetupError as e:
        say(str(e))
        return errors.EXIT_SETUP
    rows = checks(sides[0], sides[1], opts.tolerance, side_of.NOT_APPLICABLE)
    rows.sort(key=lambda r: int(r['check'].split()[0]))
    print('gloaddriver compat (%s): %s greenlets, %s ops per phase (%s), '
          'seed %d, tolerance %.0f%%; rows 7, 8 and 11: medians of %d rounds taken in turns'
          % (opts.backend, opts.greenlets, '{:,}'.format(opts.ops),
             'insert, select, update' if opts.workload == 'kv' else
             '--workload %s' % opts.workload, opts.seed, opts.tolerance, opts.rounds))
    print('A: %s\nB: %s' % (sides[0].exe, sides[1].exe))
    for r in rows:
        print('\n%-34s %s' % (r['check'], r['verdict']))
        print('  A: %s' % r['A'])
        print('  B: %s' % r['B'])
        if r['why']:
            print('  why: %s' % r['why'])
    failed = [r['check'] for r in rows if r['verdict'] == 'FAIL']
    rows.sort(key=lambda r: int(r['check'].split()[0]))
    if opts.flamegraph:
        print('')
        flamegraph_moves([sides[0].result, sides[1].result], sys.stdout, opts.flamegraph)
        differential_page(sides[0].result, sides[1].result,
                          os.path.join(opts.flamegraph, 'diff.html'), 'A', sys.stdout)
    print('\nverdict: %s' % ('FAIL (%s)' % ', '.join(failed) if failed else
                            'PASS (%d checks, %d explained differences)'
                            % (len(rows), sum(r['verdict'] == 'EXPLAINED' for r in rows))))
    if opts.json:
        with open(opts.json, 'w') as f:
            json.dump({'rows': rows, 'A': sides[0].result, 'B': sides[1].result,
                       'rounds': {'A': sides[0].rounds, 'B': sides[1].rounds},
                       'probes': [sides[0].probe, sides[1].probe]}, f, indent=1, sort_keys=True)
    return errors.EXIT_OPS_FAILED if failed else errors.EXIT_OK
