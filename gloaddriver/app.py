"""One run from a Config: spawn if asked, connect, run the phases, report.

Every error a user can cause ends here as one line and an exit code; a
traceback means a bug in gloaddriver.
"""
from __future__ import absolute_import, division, print_function

import sys

from gloaddriver import cli, errors, manifest, report
from gloaddriver.runner import Run
from gloaddriver.syscalls import SyscallCounter


def _say(text):
    sys.stderr.write('gloaddriver: %s\n' % text)


def _postgres_dsn(config):
    """(dsn, password): the DSN with --password merged in, and the secret to scrub."""
    import psycopg2.extensions as ext
    try:
        parsed = ext.parse_dsn(config.dsn) if config.dsn else {}
    except Exception as e:
        from gloaddriver.backends.postgres.pool import scrub
        raise errors.SetupError('--dsn is not a valid connection string: %s'
                                % scrub(e, config.password))
    password = config.password or parsed.get('password')
    dsn = ext.make_dsn(config.dsn, password=config.password) if config.password else config.dsn
    return dsn, password


def _open_backend(config):
    """(backend, server settings, server, counter) for the configured backend."""
    server = None
    settings = {'kind': config.backend, 'spawned': False}
    if config.backend == 'postgres':
        from gloaddriver.backends.postgres import pool as pgpool
        pgpool.install(config.wait_callback)     # before any connection
        if config.spawn:
            from gloaddriver.servers import PostgresServer
            server = PostgresServer(wal_mode=config.wal_mode).start()
            config = config._replace(dsn=server.dsn, password=server.password, init=True)
            settings = server.settings()
        dsn, password = _postgres_dsn(config)
        counter = SyscallCounter(enable=config.syscalls)
        if config.workload == 'bulk':
            from gloaddriver.backends.postgres.bulk import BulkLoader
            backend = BulkLoader(config, dsn, password, counter)
        else:
            from gloaddriver.backends.postgres.backend import PostgresBackend
            backend = PostgresBackend(config, dsn, password)
        return config, backend, settings, server, counter
    if config.spawn:
        from gloaddriver.servers import TarantoolServer
        server = TarantoolServer(space=config.space, wal_mode=config.wal_mode).start()
        config = config._replace(host=server.host, port=server.port, user=server.user,
                                 password=server.password)
        settings = server.settings()
    # Counters open after the spawn: inherited counters would count the server too.
    counter = SyscallCounter(enable=config.syscalls)
    from gloaddriver.backends.tarantool.backend import make_backend
    return config, make_backend(config), settings, server, counter


def _server_metrics(config, backend, server):
    """The per-interval server sampler, or None when it cannot be had (said in the result)."""
    from gloaddriver import server_metrics
    pid = server.proc.pid if server is not None and server.proc is not None else None
    try:
        if config.backend == 'postgres':
            return server_metrics.for_postgres(backend.pool, pid)
        return server_metrics.for_tarantool(config, pid)
    except errors.GloadError as e:
        _say('note: no server metrics: %s' % e)
        return None


def run(config, out=None):
    out = out if out is not None else sys.stdout
    server = backend = counter = metrics = None
    try:
        config, backend, server_settings, server, counter = _open_backend(config)
        try:
            backend.open()
        except errors.ConnectError as e:
            if config.backend == 'tarantool':
                raise errors.ConnectError('%s. Start a server there, point --uri at one, or use '
                                          '--spawn for a private one' % e)
            raise
        profiler = None
        if config.callgrind or config.pstats:
            from gloaddriver.profiling import Profiler
            profiler = Profiler(config.callgrind, config.pstats, config.profile_clock,
                                config.profiler)
        if config.workload == 'bulk':
            phases, aborted = backend.run(config.bulk_methods, config.rows), None
        else:
            metrics = _server_metrics(config, backend, server)
            from gloaddriver.processes import wait_for_start
            wait_for_start()   # with --processes: begin together with the others
            the_run = Run(config, backend, counter, profiler=profiler, server_metrics=metrics)
            phases, aborted = the_run.execute(), the_run.aborted
        result = {
            'manifest': manifest.build(config, backend, server_settings, counter.source,
                                       counter.reason,
                                       profiler.describe() if profiler is not None else None),
            'phases': phases,
            'aborted': aborted,
        }
        for line in report.table(result):
            out.write(line + '\n')
        out.flush()
        if config.json:
            report.write_json(result, config.json)
        if config.html:
            from gloaddriver import html_report
            html_report.write(result, config.html)
        bad = sum(p['failed'] + p['timed_out'] for p in phases)
        if aborted:
            _say('run aborted: %s' % aborted)
            return cli.EXIT_OPS_FAILED
        if bad:
            _say('%d of %d ops failed or timed out (see the error lines above)'
                 % (bad, sum(p['attempted'] for p in phases)))
            return cli.EXIT_OPS_FAILED
        return cli.EXIT_OK
    except errors.SetupError as e:
        _say(str(e))
        return cli.EXIT_SETUP
    except errors.ConfigError as e:
        _say('error: %s' % e)
        return cli.EXIT_USAGE
    except KeyboardInterrupt:
        _say('interrupted')
        return cli.EXIT_INTERRUPTED
    finally:
        if metrics is not None:
            metrics.close()
        if backend is not None:
            backend.close()
        if counter is not None:
            counter.close()
        if server is not None:
            server.stop()
