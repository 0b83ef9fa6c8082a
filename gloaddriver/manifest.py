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
from gloaddriver.compat import CLOCK_NAME

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
    """True when msgpack runs its C extension (design.md: the pure fallback is ~6x slower)."""
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


def build(config, backend, server_settings, syscall_source, syscall_reason, profiler=None):
    m = fingerprint()
    m.update({
        'started': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
        'argv': list(config.argv),
        'backend': config.backend,
        'connector': config.connector,
        'connector_detail': backend.describe(),
        'greenlets': config.greenlets,
        'connections': config.connections if config.connector == 'buffered' else config.greenlets,
        'server': dict(server_settings, address=_address(config, backend),
                       version=_version(backend)),
        'seed': config.seed,
        'ops_per_phase': config.ops,
        'duration_per_phase': config.duration,
        'warmup_seconds': config.warmup,
        'keys': config.keys,
        'distribution': config.distribution,
        'value_size': config.value_size,
        'phases': [{'name': p.name, 'weights': dict(p.weights)} for p in config.phases],
        'timeout': config.timeout,
        'overlap': config.overlap if config.connector == 'buffered' else None,
        'workload': config.workload,
        'shard': '%d/%d' % config.shard if config.shard else None,
        'pool_size': config.pool_size if config.backend == 'postgres' else None,
        'prepared': config.prepared if config.backend == 'postgres' else None,
        'wait_callback': config.wait_callback if config.backend == 'postgres' else None,
        'syscall_source': syscall_source,
        'syscall_reason': syscall_reason,
        'profiler': profiler,
    })
    return m


def _address(config, backend):
    if config.backend == 'postgres':
        addr = getattr(backend, 'address', None)
        return (addr() if callable(addr) else addr) or 'libpq default'
    return '%s:%s' % (config.host, config.port)


def _version(backend):
    v = getattr(backend, 'server_version', None)
    if callable(v):
        return v()
    return getattr(backend, 'version', None)
