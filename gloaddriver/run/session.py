"""One run from a Config: spawn if asked, open the backend, run the phases, report.

Every error a user can cause ends here as one line and an exit code
(``errors.report_error``); a traceback means a bug in gloaddriver.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver import backends, errors
from gloaddriver.backends.launcher import Launcher
from gloaddriver.measure import manifest, run_result, stats
from gloaddriver.measure.syscalls import SyscallCounter
from gloaddriver.report import live as live_out
from gloaddriver.report import output
from gloaddriver.report import web as web_out
from gloaddriver.run.faults import Injector
from gloaddriver.run.interrupts import Interrupts
from gloaddriver.run.kept import Kept
from gloaddriver.run.listeners import FlameGraphs
from gloaddriver.run.runner import Run


def _metrics(backend, server, period):
    """The per-interval server sampler, or None when it cannot be had (said in the result)."""
    pid = server.proc.pid if server is not None and server.proc is not None else None
    try:
        metrics = backend.server_metrics(pid)
    except errors.GloadError as e:
        errors.say('note: no server metrics: %s' % e)
        return None
    # A spawned replica set adds its members' figures (requests each served, lag).
    extend = getattr(server, 'extend_metrics', None)
    return extend(metrics, period) if extend is not None else metrics


def _samplers(config, server):
    """{result key: sampler} of --flamegraph and --server-flamegraph (run.sampler), each
    checked before the first op; an empty Samplers when neither is asked for."""
    prof = config.profiling
    out = Samplers()
    if not (prof.flamegraph or prof.server_flamegraph):
        return out
    from gloaddriver.run import sampler
    if prof.flamegraph:
        client = sampler.ClientSampler(prof.flamegraph, prof.flamegraph_rate)
        client.check()
        out['flamegraph'] = client
    if prof.server_flamegraph:
        pid = prof.server_pid if server is None else server.proc.pid
        recorder = sampler.ServerSampler(prof.server_flamegraph, prof.flamegraph_rate, pid)
        why = recorder.check()
        if why is None:
            out['server_flamegraph'] = recorder
        else:   # the run goes on: the server's graph is a view, not a figure
            errors.say('note: no server flame graph: %s' % why)
    if not out:
        return out
    out.launcher = Launcher()
    for s in out.values():
        s.launcher = out.launcher
    return out


class Samplers(dict):
    """{result key: sampler} and the launcher that starts them (closed with the run)."""
    launcher = None


def _profiler(prof):
    """--callgrind/--pstats: the client profiler, or None."""
    if not (prof.callgrind or prof.pstats):
        return None
    from gloaddriver.measure.profiler import Profiler
    return Profiler(prof.callgrind, prof.pstats, prof.clock, prof.profiler)


def _manifest(config, kind, backend, settings, counter, profiler):
    return manifest.build(config, kind, backend, settings, counter,
                          profiler.describe() if profiler is not None else None)


def _rounds(the_run, n):
    """The phases, N times under --repeat N (one round after another, until one is
    aborted); their results, every round's."""
    phases = []
    for i in range(1, n + 1):
        phases = the_run.execute((i, n))
        if the_run.aborted:
            break
    return phases


def _outputs(config, kept, result, web, out):
    """The finished run's outputs: judged (--fail-if, against --baseline's stored runs),
    written, shown on --web, recorded in the --store; its exit code."""
    baseline, said = kept.baseline()
    if baseline is not None:
        result['baseline'] = dict((k, baseline[k]) for k in ('scenario', 'runs', 'wanted'))
    failed = output.write(result, config.output.json, config.output.html, out,
                          notes=[said] if said else (), fail_if=config.output.fail_if,
                          csv_prefix=config.output.csv, junit_path=config.output.junit,
                          baseline=baseline)
    if web is not None:
        web.finish(result)
    return kept.record(result, output.exit_code(result, failed))


def run(config, out=None):
    kind = backends.get(config.backend)
    stats.choose_percentiles(config.output.percentiles)
    server = backend = counter = metrics = live = injector = web = samplers = search = None
    kept = Kept(config)
    try:
        web = web_out.open(config)   # first: its URL is said before the server starts
        kept.open_store()
        settings = {'kind': kind.name, 'spawned': False}
        if config.target.spawn:
            server = kind.spawn(config)
            config = kind.target(config, server)
            settings = server.settings()
        # The samplers' launcher too: py-spy and perf are then never ours.
        samplers = _samplers(config, server)
        # Counters open after the spawn: the server and its launcher exist already, and
        # what the launcher starts later (a restart) is not a descendant of ours.
        counter = SyscallCounter(enable=config.output.syscalls)
        backend = kind.backend(config, counter)
        backend.open()
        profiler = _profiler(config.profiling)
        phases, aborted, verified = backend.run_phases(), None, None
        if phases is None:
            metrics = _metrics(backend, server, config.output.interval)
            live = live_out.open(config)
            sink = live
            if web is not None:
                web.server_charts = metrics.charts if metrics is not None else ()
                sink = web if live is None else web_out.Both(live, web)
            if config.target.faults:
                injector = Injector(config.target.faults, server)
            the_run = Run(config, backend, counter, profiler=profiler, server_metrics=metrics,
                          live=sink, faults=injector,
                          listeners=kept.listeners() + ([FlameGraphs(samplers)] if samplers
                                                        else []))
            kept.attach(the_run, lambda: _manifest(config, kind, backend, settings, counter,
                                                   profiler), injector)
            the_run.setup()
            from gloaddriver.run.processes import wait_for_start
            wait_for_start(config.load.start_at)   # begin together with the others
            with Interrupts(the_run.interrupt):
                phases = _rounds(the_run, config.load.repeat)
            aborted, verified, search = the_run.aborted, the_run.verified, the_run.search
        if live is not None:
            # Closed before the result is written, so that what it dropped is in it.
            dropped, live = live.close(), None
        else:
            dropped = None
        result = run_result.build(
            _manifest(config, kind, backend, settings, counter, profiler),
            phases, aborted, verify=verified,
            faults=injector.describe() if injector is not None else None, live=dropped,
            repeat=config.load.repeat, find_max=search.describe() if search else None)
        kept.finish(result)
        return _outputs(config, kept, result, web, out)
    except (errors.GloadError, KeyboardInterrupt) as e:
        return errors.report_error(e)
    finally:
        stats.choose_percentiles(None)    # what the process makes next is not this run's
        kept.close()
        if injector is not None:
            injector.end()
        if live is not None:
            live.close()
        if web is not None:
            web.close()
        if metrics is not None:
            metrics.close()
        if backend is not None:
            backend.close()
        if counter is not None:
            counter.close()
        if samplers:
            samplers.launcher.close()
        if server is not None:
            server.stop()
