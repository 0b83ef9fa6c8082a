"""What a result was measured with: interpreter, dependency versions, loop.

Every JSON result carries this, so two results can be compared knowing what
differed. Collected once per run, off the hot path.
"""
from __future__ import absolute_import, division, print_function

import os
import platform
import socket
import sys
import time

from gloaddriver import __version__
from gloaddriver.py23 import CLOCK_NAME

DEPENDENCIES = ('gevent', 'greenlet', 'msgpack', 'tarantool', 'psycopg2-binary', 'psycogreen',
                'hdrhistogram', 'yappi')


def _dist_version(name):
    try:
        from importlib import metadata   # 3.8+
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None
    except ImportError:
        pass
    try:
        import pkg_resources
        return pkg_resources.get_distribution(name).version
    except Exception:
        return None


def msgpack_c_extension():
    """True when msgpack runs its C extension (its pure-Python fallback is several times
    slower, and would make the driver measure itself)."""
    try:
        from msgpack import _cmsgpack  # noqa: F401  (msgpack >= 0.6)
        return True
    except ImportError:
        pass
    try:
        from msgpack import _packer  # noqa: F401  (older layout)
        return True
    except ImportError:
        return False


def gevent_loop():
    import gevent
    loop = gevent.get_hub().loop
    return '%s.%s' % (loop.__class__.__module__, loop.__class__.__name__)


def fingerprint():
    return {
        'interpreter': '%s %s' % (platform.python_implementation(), platform.python_version()),
        'executable': sys.executable,
        'gloaddriver': __version__,
        'dependencies': dict((d, _dist_version(d)) for d in DEPENDENCIES),
        'msgpack_c_extension': msgpack_c_extension(),
        'gevent_loop': gevent_loop(),
        'clock': CLOCK_NAME,
        'platform': platform.platform(),
        'cpus': _cpus(),
        'hostname': socket.gethostname(),
    }


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        import multiprocessing
        return multiprocessing.cpu_count()


def build(config, kind, backend, server_settings, counter, profiler=None):
    """The manifest of a run: this machine and interpreter, the flags, the server, the
    connector (from its backend kind)."""
    m = fingerprint()
    load = config.load
    m.update({
        'started': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
        'argv': list(config.argv),
        'backend': config.backend,
        'connector_detail': backend.describe(),
        'greenlets': load.greenlets,
        'server': dict(server_settings, address=backend.address(),
                       version=backend.server_version(), product=kind.title),
        'seed': load.seed,
        'ops_per_phase': load.ops,
        'duration_per_phase': load.duration,
        'stages': load.stages.text if load.stages else None,
        'warmup_seconds': load.warmup,
        'keys': load.keys,
        'distribution': load.distribution,
        # One size is the integer it always was; a range or a list is its text.
        'value_size': getattr(load.value_size, 'text', load.value_size),
        'phases': [{'name': p.name, 'weights': dict(p.weights)} for p in load.phases],
        'timeout': config.limits.timeout,
        'shard': '%d/%d' % load.shard if load.shard else None,
        'start_at': load.start_at,
        'workload_file': load.workload_file,
        'syscall_source': counter.source,
        'syscall_reason': counter.reason,
        'profiler': profiler,
        # --percentiles: what the reports show (the latency blocks hold these and today's).
        'percentiles': list(config.output.percentiles),
    })
    m.update(kind.manifest(config))
    return m
