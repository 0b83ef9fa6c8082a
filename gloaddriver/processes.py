"""--processes P: P driver processes, one hub each, started together, merged exactly.

Each child is this same driver with ``--shard i/P`` (disjoint keys, so phases
need no cross-process ordering) and its share of ``--ops``. Children connect
and prepare, say they are ready, and wait on stdin until every one is; then
all start at once. Their JSON results are merged with ``results.merge``:
counts and syscall counts add up, histograms are added (exact percentiles),
rates of processes that ran side by side add up. The per-process results stay
in the JSON under ``processes``.
"""
from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import subprocess
import sys
import tempfile

from gloaddriver import errors

START_ENV = 'GLOADDRIVER_START_BARRIER'
READY = 'gloaddriver: ready to start'
# Flags the parent handles itself, with whether they take a value.
_PARENT_FLAGS = {'--processes': True, '--spawn': False, '--json': True, '--progress': True,
                 '--html': True, '--interval': True, '--rate': True}


def wait_for_start():
    """In a child: report ready, block until the parent says go (no-op otherwise)."""
    if os.environ.get(START_ENV):
        sys.stderr.write(READY + '\n')
        sys.stderr.flush()
        sys.stdin.readline()


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


def run(config, argv, out=None):
    from gloaddriver import report, results
    out = out if out is not None else sys.stdout
    if config.shard:
        raise errors.ConfigError('--processes and --shard together are not supported yet: '
                                 'run one shard per host with --processes 1')
    if config.workload == 'bulk':
        raise errors.ConfigError('--processes does not apply to --workload bulk')
    n = config.processes
    server = None
    tmp = tempfile.mkdtemp(prefix='gloaddriver-processes-')
    children = []
    try:
        env = dict(os.environ, **{START_ENV: '1'})
        # --keys from the total --ops: a child would derive it from its share.
        # A profile in argv would bring its own spawn/processes back: override them.
        base = _child_argv(argv) + ['--progress', '0', '--interval', str(config.interval),
                                    '--keys', str(config.keys),
                                    '--no-spawn', '--processes', '1']
        if config.spawn:
            if config.backend == 'postgres':
                from gloaddriver.servers import PostgresServer
                server = PostgresServer(wal_mode=config.wal_mode).start()
                base += ['--dsn', 'host=%s port=%d dbname=%s user=%s sslmode=disable' % (
                    server.host, server.port, server.database, server.user), '--init']
            else:
                from gloaddriver.servers import TarantoolServer
                server = TarantoolServer(space=config.space, wal_mode=config.wal_mode).start()
                base += ['--uri', server.uri, '--user', server.user]
            env['GLOADDRIVER_PASSWORD'] = server.password
        for i in range(n):
            path = os.path.join(tmp, '%d.json' % i)
            args = base + ['--shard', '%d/%d' % (i, n), '--ops', str(_split(config.ops, n, i)),
                           '--json', path]
            if config.rate:   # --rate is the whole run's: each process takes its share
                args += ['--rate', repr(config.rate / n)]
            p = subprocess.Popen([sys.executable, '-m', 'gloaddriver'] + args, env=env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
            children.append((p, path))
        for p, _path in children:   # the start barrier
            seen = []
            while True:
                line = p.stderr.readline().decode('utf-8', 'replace')
                if not line:
                    raise errors.SetupError('a worker process exited before starting: %s'
                                            % ' '.join(l.strip() for l in seen[-3:]))
                if line.strip() == READY:
                    break
                seen.append(line)
        for p, _path in children:
            p.stdin.write(b'go\n')
            p.stdin.flush()
        parts, codes, messages = [], [], []
        for p, path in children:
            _out, err = p.communicate()
            codes.append(p.returncode)
            messages += [l for l in err.decode('utf-8', 'replace').splitlines() if l.strip()]
            if not os.path.exists(path):
                raise errors.SetupError('a worker process wrote no result (exit %d): %s'
                                        % (p.returncode, ' '.join(messages[-3:])))
            with open(path) as f:
                parts.append(json.load(f))
        merged = results.merge(parts)
        merged['manifest']['processes'] = n
        merged['manifest']['argv'] = list(config.argv)
        if server is not None:
            merged['manifest']['server'] = dict(server.settings(), address=server.uri,
                                                version=parts[0]['manifest']['server'].get('version'))
        merged['processes'] = parts
        for line in report.table(merged):
            out.write(line + '\n')
        out.write('%d processes, merged: rates add up, percentiles from the summed histograms\n'
                  % n)
        out.flush()
        for m in messages:
            sys.stderr.write(m + '\n')
        if config.json:
            report.write_json(merged, config.json)
        if config.html:
            from gloaddriver import html_report
            html_report.write(merged, config.html)
        return max(codes)
    finally:
        for p, _path in children:
            if p.poll() is None:
                p.kill()
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
