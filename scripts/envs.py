#!/usr/bin/env python3
"""A checkout's interpreter environments (developer tooling, not part of the package):
find a Python by version, and make .venv/pyXY with this checkout installed in it.
scripts/lib.sh's ``ensure_venv`` runs it; so can anyone who wants a checkout's
environment to hand ``gloaddriver compat --python``.

One layout: .venv/pyXY (.venv/py27, .venv/py311, .venv/py313), each with this
checkout installed once as ``pip install -e ROOT[profile,test,sqlalchemy]``. A stamp file
in it holds the POSIX cksum of setup.cfg + setup.py (what the first, shell version
of this helper wrote), then the C sources the install compiles; when they change,
the environment is made again. 2.7 has no venv module: virtualenv < 20.16 makes
its environment. Interpreters are found as ``gloaddriver compat`` finds them
(gloaddriver/compat/interpreters.py). Standard library only; runs on 2.7 and 3.x
without gevent, before anything is installed.

Command line (messages on stderr)::

    python3 scripts/envs.py ensure 2.7   # prints the venv's python, making it if needed
    python3 scripts/envs.py find 3.13    # prints an interpreter, or exits 1
"""
from __future__ import absolute_import, division, print_function

import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)   # this checkout's package, not an installed one

from gloaddriver.compat.interpreters import find, version_of  # noqa: E402

VENVS = os.path.join(ROOT, '.venv')
STAMP = '.gloaddriver-installed'
INSTALL = ROOT + '[profile,test,sqlalchemy]'


class EnvError(Exception):
    """An interpreter or its environment cannot be had."""


def _crc_table():
    table = []
    for i in range(256):
        c = i << 24
        for _ in range(8):
            c = ((c << 1) ^ 0x04C11DB7) if c & 0x80000000 else (c << 1)
        table.append(c & 0xffffffff)
    return table


_CRC = _crc_table()


def cksum(data):
    """The CRC that POSIX ``cksum`` prints for ``data`` (bytes)."""
    crc = 0
    for b in bytearray(data):
        crc = ((crc << 8) & 0xffffffff) ^ _CRC[(crc >> 24) ^ b]
    n = len(data)
    while n:
        crc = ((crc << 8) & 0xffffffff) ^ _CRC[(crc >> 24) ^ (n & 0xff)]
        n >>= 8
    return ~crc & 0xffffffff


def stamp():
    """What the stamp file holds when the install is current:
    ``cat setup.cfg setup.py C-SOURCES | cksum | cut -d' ' -f1``, the C sources (and
    their header) those of the package (its compiled extensions are built at install)."""
    data = b''
    sources = []
    for top, _dirs, files in os.walk(os.path.join(ROOT, 'gloaddriver')):
        sources.extend(os.path.join(top, f) for f in files if f.endswith(('.c', '.h')))
    for name in ['setup.cfg', 'setup.py'] + sorted(sources):
        with open(os.path.join(ROOT, name), 'rb') as f:
            data += f.read()
    return str(cksum(data))


def _clean_env():
    """The environment for probing and building: no PYTHONPATH/PYTHONHOME of ours."""
    env = dict(os.environ)
    env.pop('PYTHONPATH', None)
    env.pop('PYTHONHOME', None)
    return env


def venv_dir(version):
    """.venv/pyXY for version 'X.Y'."""
    return os.path.join(VENVS, 'py' + version.replace('.', ''))


def _say(text):
    sys.stderr.write('%s\n' % text)
    sys.stderr.flush()


def _found(spec):
    exe = find(spec)
    if exe is None:
        raise EnvError('interpreter %r not found (looked on PATH, in pyenv, /usr/local/bin '
                       'and /usr/bin); install it or pass a path to one' % spec)
    return exe


def ensure_venv(spec, say=_say):
    """The python of .venv/pyXY for ``spec``, with this checkout installed; made if
    missing or if setup.cfg/setup.py changed since (the stamp)."""
    exe = _found(spec)
    version = version_of(exe, _clean_env())
    venv = venv_dir(version)
    py = os.path.join(venv, 'bin', 'python')
    want = stamp()
    stamp_file = os.path.join(venv, STAMP)
    if os.access(py, os.X_OK) and _read(stamp_file) == want:
        return py
    say('preparing %s (Python %s, %s)' % (venv, version, exe))
    try:
        if os.path.lexists(venv):
            shutil.rmtree(venv)
        if version.startswith('2.'):
            # No venv module on 2.7; virtualenv < 20.16 still runs on it. Never
            # pip --target/PYTHONPATH: zope namespace packages would break gevent.
            if subprocess.call([exe, '-m', 'virtualenv', '--version'], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=_clean_env()) != 0:
                _run([exe, '-m', 'pip', 'install', '-q', '--disable-pip-version-check',
                      'virtualenv<20.16'])
            _run([exe, '-m', 'virtualenv', '-q', venv])
        else:
            _run([exe, '-m', 'venv', venv])
            if version == '3.6':    # the newest pip that still runs on 3.6
                _run([py, '-m', 'pip', 'install', '-q', '--disable-pip-version-check', 'pip<22'])
        _run([py, '-m', 'pip', 'install', '-q', '--disable-pip-version-check', '-e', INSTALL])
    except (EnvError, OSError) as e:
        raise EnvError('cannot set up Python %s (%s) for gloaddriver in %s: %s'
                       % (version, exe, venv, e))
    with open(stamp_file, 'w') as f:
        f.write(want + '\n')
    return py


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except (IOError, OSError):
        return None


def _run(cmd):
    """Run a build step quietly; on failure raise with the end of its output
    (without pip's Python 2.7 DEPRECATION notices)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_clean_env())
    out = p.communicate()[0].decode('utf-8', 'replace').splitlines()
    if p.returncode != 0:
        out = [l for l in out if l.strip() and 'DEPRECATION' not in l and 'Python 2.7' not in l]
        raise EnvError('%s failed (exit %d):\n  %s' % (' '.join(cmd), p.returncode,
                                                       '\n  '.join(out[-15:])))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in ('ensure', 'find'):
        _say('usage: scripts/envs.py ensure|find VERSION\n'
             '  ensure 2.7   print the python of .venv/py27, making it if needed\n'
             '  find 3.13    print a Python 3.13 interpreter, or exit 1')
        return 2
    cmd, spec = argv
    if cmd == 'find':
        exe = find(spec)
        if exe is None:
            _say('Python %s not found (looked on PATH, in pyenv, /usr/local/bin and /usr/bin)'
                 % spec)
            return 1
        print(exe)
        return 0
    try:
        print(ensure_venv(spec))
    except EnvError as e:
        _say('error: %s' % e)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
