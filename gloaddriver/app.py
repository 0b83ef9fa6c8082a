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


def run(config, out=None):
    out = out if out is not None else sys.stdout
    server = backend = counter = None
    try:
        server_settings = {'kind': config.backend, 'spawned': False}
        if config.spawn:
            from gloaddriver.servers import TarantoolServer
            server = TarantoolServer(space=config.space, wal_mode=config.wal_mode).start()
            config = config._replace(host=server.host, port=server.port, user=server.user,
                                     password=server.password)
            server_settings = server.settings()
        # Counters open after the spawn: inherited counters would count the server too.
        counter = SyscallCounter(enable=config.syscalls)
        from gloaddriver.backends.tarantool.backend import make_backend
        backend = make_backend(config)
        try:
            backend.open()
        except errors.ConnectError as e:
            raise errors.ConnectError('%s. Start a server there, point --uri at one, or use '
                                      '--spawn for a private one' % e)
        profiler = None
        if config.callgrind or config.pstats:
            from gloaddriver.profiling import Profiler
            profiler = Profiler(config.callgrind, config.pstats, config.profile_clock,
                                config.profiler)
        the_run = Run(config, backend, counter, profiler=profiler)
        phases = the_run.execute()
        result = {
            'manifest': manifest.build(config, backend, server_settings, counter.source,
                                       counter.reason,
                                       profiler.describe() if profiler is not None else None),
            'phases': phases,
            'aborted': the_run.aborted,
        }
        for line in report.table(result):
            out.write(line + '\n')
        out.flush()
        if config.json:
            report.write_json(result, config.json)
        bad = sum(p['failed'] + p['timed_out'] for p in phases)
        if the_run.aborted:
            _say('run aborted: %s' % the_run.aborted)
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
        if backend is not None:
            backend.close()
        if counter is not None:
            counter.close()
        if server is not None:
            server.stop()
