"""--processes P: P driver processes, one hub each, started together, merged exactly.

Each child is this same driver with ``--shard i/P`` (disjoint keys, so phases
need no cross-process ordering) and its share of ``--ops``. Children connect
and prepare, say they are ready, and wait on stdin until every one is; then
all start at once. Their JSON results are merged with ``run_result.merge``
(measure/), as ``gloaddriver merge`` does: counts, exact latency sums and syscall
counts add up, histograms are added (exact percentiles), rates of processes that
ran side by side add up. The per-process results stay
in the JSON under ``processes``.

With --find-max the parent searches and the children measure: before each step it
writes every child its share of the step's rate on stdin (``end`` when the search is
over), each child runs the step and writes its phase result back as one line on
stdout, and the parent judges the merged step (``_search_together``).
"""
from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

from gloaddriver import errors
from gloaddriver.backends.launcher import detach
from gloaddriver.run.interrupts import Interrupts

START_ENV = 'GLOADDRIVER_START_BARRIER'
READY = 'gloaddriver: ready to start'
FOLLOW_ENV = 'GLOADDRIVER_FIND_MAX_FOLLOW'
STEP = 'gloaddriver: step '   # a child's measured --find-max step: this, then its JSON
# Flags the parent handles itself, with whether they take a value.
_PARENT_FLAGS = {'--processes': True, '--spawn': False, '--json': True, '--progress': True,
                 '--fail-if': True, '--csv': True, '--prometheus-port': True, '--fault': True,
                 '--html': True, '--interval': True, '--rate': True, '--spawn-init': True,
                 '--replicas': True, '--replication': True, '--junit': True,
                 '--server-flamegraph': True, '--server-pid': True, '--flamegraph-rate': True}


def wait_for_start(start_at=None):
    """In a child: report ready, block until the parent says go. With --start-at: wait
    until that time (shards on several hosts). No-op otherwise."""
    if os.environ.get(START_ENV):
        sys.stderr.write(READY + '\n')
        sys.stderr.flush()
        _order()
    if start_at is not None:
        import time
        import gevent
        late = time.time() - start_at
        if late > 0:
            errors.say('note: --start-at was %.1f s ago; starting now' % late)
        else:
            gevent.sleep(-late)


def _order():
    """A child's next line from its parent, waiting in the hub. Read a byte at a time,
    unbuffered: a buffered read could take the next order (go, then a step's rate,
    come close together) out of the pipe, and a wait on the pipe would never see it."""
    from gevent.socket import wait_read
    line = b''
    while not line.endswith(b'\n'):
        wait_read(0)
        byte = os.read(0, 1)
        if not byte:   # the parent is gone
            break
        line += byte
    return line.decode('ascii', 'replace').strip()


def step_orders():
    """In a child of --processes --find-max: its parent's orders (``Orders``); None
    elsewhere."""
    return Orders() if os.environ.get(FOLLOW_ENV) else None


class Orders(object):
    """A child's side of the search: the rate of each step from stdin, each step's
    phase result back on stdout."""

    def rate(self):
        """The next step's rate, or None: the search is over."""
        line = _order()
        return float(line) if line and line != 'end' else None

    def report(self, phase):
        sys.stdout.write(STEP + json.dumps(phase, sort_keys=True) + '\n')
        sys.stdout.flush()


def _search_together(children, search, greenlets, interrupted, progress):
    """The parent's search: each step's rate shared among the children, their phase
    results merged and judged as one step. Ends the children's steps."""
    from gloaddriver.measure.phase_result import PhaseResult
    n = len(children)

    def measure(rate):
        if interrupted:
            return None
        for p, _path in children:
            p.stdin.write(('%r\n' % (rate / n)).encode('ascii'))
            p.stdin.flush()
        parts = [_step_of(p) for p, _path in children]
        if interrupted or None in parts:   # stopped, or a child gone
            return None
        phase = PhaseResult.merged(parts[0]['name'], parts)
        phase['step'] = parts[0]['step']
        return phase

    def say(line):
        if progress > 0:
            sys.stderr.write(line + '\n')
            sys.stderr.flush()
    search.greenlets = greenlets * n
    try:
        search.search(measure, say, lambda _so_far: None)
    finally:
        for p, _path in children:
            if p.poll() is None:
                try:
                    p.stdin.write(b'end\n')
                    p.stdin.flush()
                except (IOError, OSError):   # it has just ended
                    pass


def _step_of(child):
    """A child's next measured step, or None when it ended without one."""
    while True:
        line = child.stdout.readline().decode('utf-8', 'replace')
        if not line:
            return None
        if line.startswith(STEP):
            return json.loads(line[len(STEP):])


def _child_argv(argv):
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        name = a.split('=', 1)[0]
        if name in _PARENT_FLAGS:
            skip = _PARENT_FLAGS[name] and '=' not in a
            continue
        out.append(a)
    return out


def _split(total, n, i):
    return total // n + (1 if i < total % n else 0)


def _run_children(children, interrupted, on_go=None):
    """Start barrier, go, and the children's results: (parts, exit codes, stderr lines).
    After an interrupt, a child that wrote no result is left out, not an error.
    ``on_go`` is called as the children are told to start (the --fault schedule)."""
    for p, _path in children:   # the start barrier
        seen = []
        while True:
            line = p.stderr.readline().decode('utf-8', 'replace')
            if not line:
                if interrupted:
                    break
                raise errors.SetupError('a worker process exited before starting: %s'
                                        % ' '.join(l.strip() for l in seen[-3:]))
            if line.strip() == READY:
                break
            seen.append(line)
    for p, _path in children:
        if p.poll() is None:
            p.stdin.write(b'go\n')
            p.stdin.flush()
    if on_go is not None:
        on_go()
    parts, codes, messages = [], [], []
    for p, path in children:
        _out, err = p.communicate()
        codes.append(p.returncode)
        messages += [l for l in err.decode('utf-8', 'replace').splitlines() if l.strip()]
        if not os.path.exists(path):
            if interrupted:
                continue
            raise errors.SetupError('a worker process wrote no result (exit %d): %s'
                                    % (p.returncode, ' '.join(messages[-3:])))
        with open(path) as f:
            parts.append(json.load(f))
    return parts, codes, messages


def _share(config, i, n, server):
    """Child i's part of the run: its shard, its ops, its rate, its Prometheus port, its
    flame graphs."""
    load = config.load
    args = ['--shard', '%d/%d' % (i, n)]
    if load.find_max is None:   # --find-max: each step's window ends it
        args += ['--ops', str(_split(load.ops, n, i))]
    if load.rate:   # --rate is the whole run's: each process takes its share
        args += ['--rate', repr(load.rate / n)]
    live = config.output.live
    if live is not None and live.prometheus is not None:   # an endpoint each
        host = live.prometheus.host or '0.0.0.0'
        args += ['--prometheus-port=%s:%d' % ('[%s]' % host if ':' in host else host,
                                              live.prometheus.port + i)]
    return args + _flamegraphs(config, server, i)


def _flamegraphs(config, server, i):
    """Child i's flame-graph flags: each child samples itself (--flamegraph); the one
    server is recorded by child 0 alone, over the windows every child shares (two perf
    sessions on one server would sample it twice)."""
    prof = config.profiling
    args = []
    if i == 0 and prof.server_flamegraph:
        pid = server.proc.pid if server is not None else prof.server_pid
        args += ['--server-flamegraph', prof.server_flamegraph, '--server-pid', str(pid)]
    if prof.flamegraph_rate is not None and (args or prof.flamegraph):
        args += ['--flamegraph-rate', str(prof.flamegraph_rate)]
    return args


def _base_argv(config, argv):
    """What every child is given: the user's flags, less the parent's own."""
    # --keys from the total --ops: a child would derive it from its share.
    # A profile in argv would bring its own spawn/processes back: override them.
    base = _child_argv(argv) + ['--progress', '0', '--interval', str(config.output.interval),
                                '--keys', str(config.load.keys), '--spawn-init=',
                                '--no-spawn', '--processes', '1']
    if config.load.phases[0].name == 'load':
        base.append('--load')    # the load the parent chose for its spawned server
    return base


def _start(children, config, base, env, tmp, server):
    """Start the children, each appended to ``children`` as (Popen, its result's path)
    as soon as it runs (so that the caller kills what started, whatever fails)."""
    n = config.load.processes
    for i in range(n):
        path = os.path.join(tmp, '%d.json' % i)
        args = base + _share(config, i, n, server) + ['--json', path]
        # Their own session: a terminal's Ctrl-C reaches the parent only, which passes
        # it on once (two would make a child quit at once); and killed with the parent,
        # however it dies.
        p = subprocess.Popen([sys.executable, '-m', 'gloaddriver'] + args, env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, preexec_fn=detach)
        children.append((p, path))


def run(config, argv, out=None):
    from gloaddriver import backends
    from gloaddriver.measure import run_result
    from gloaddriver.report import output
    kind = backends.get(config.backend)
    load = config.load
    if load.shard:
        raise errors.ConfigError('--processes and --shard together are not supported yet: '
                                 'run one shard per host with --processes 1')
    kind.with_processes(config)
    from gloaddriver.measure import stats
    stats.choose_percentiles(config.output.percentiles)   # the merge's latency blocks
    n = load.processes
    server = injector = search = None
    tmp = tempfile.mkdtemp(prefix='gloaddriver-processes-')
    children = []
    try:
        env = dict(os.environ, **{START_ENV: '1'})
        if load.find_max is not None:   # the parent searches, the children measure
            from gloaddriver.run.find_max import Search
            search = Search(load.find_max, load.greenlets)
            env[FOLLOW_ENV] = '1'
        base = _base_argv(config, argv)
        if config.target.spawn:
            server = kind.spawn(config)
            extra, extra_env = kind.server_argv(server)
            base += extra
            env.update(extra_env)
            env['GLOADDRIVER_PASSWORD'] = server.password
            if config.target.faults:
                from gloaddriver.run.faults import Injector
                injector = Injector(config.target.faults, server)
        _start(children, config, base, env, tmp, server)
        interrupted = []

        def interrupt():
            interrupted.append(True)
            for p, _path in children:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)

        def on_go():
            if injector is not None:
                injector.begin()
            if search is not None:
                _search_together(children, search, load.greenlets, interrupted,
                                 config.output.progress)
        with Interrupts(interrupt):
            parts, codes, messages = _run_children(children, interrupted, on_go)
        if not parts:
            raise KeyboardInterrupt()   # interrupted before any child had measured
        own = {'processes': n, 'argv': list(config.argv)}   # over the first child's
        if server is not None:
            own['server'] = dict(parts[0]['manifest']['server'], **server.settings())
        merged = run_result.merge(
            parts, aborted=errors.INTERRUPTED if interrupted else None, manifest=own,
            faults=injector.describe() if injector is not None else None, processes=parts,
            find_max=search.describe() if search is not None else None)
        failed = output.write(merged, config.output.json, config.output.html, out, notes=[
            '%d processes, merged: rates add up, percentiles from the summed histograms' % n],
            fail_if=config.output.fail_if, csv_prefix=config.output.csv,
            junit_path=config.output.junit)
        for m in messages:
            sys.stderr.write(m + '\n')
        if interrupted or config.output.fail_if or search is not None:
            return output.exit_code(merged, failed)
        return max(codes + ([errors.EXIT_OPS_FAILED] if failed else []))
    finally:
        if injector is not None:
            injector.end()
        for p, _path in children:
            if p.poll() is None:
                p.kill()
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
