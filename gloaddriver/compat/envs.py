"""Interpreter environments: find a Python by version, and make sure gloaddriver
runs on it (an environment under .venv/ with this checkout installed, built once).

The one helper for it: ``gloaddriver compat`` calls ``ensure_env``, and the
shell scripts (scripts/lib.sh) call ``python3 -m gloaddriver.compat.envs``.
"""
from __future__ import absolute_import, division, print_function

import glob
import os
import subprocess

from gloaddriver import errors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class CompatError(errors.GloadError):
    """An interpreter or its environment cannot be had."""


def _version_of(exe):
    try:
        out = subprocess.check_output([exe, '-c', 'import sys; print("%d.%d" % sys.version_info[:2])'],
                                      stderr=subprocess.STDOUT)
        return out.decode().strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def find_interpreter(spec):
    """A path to a working interpreter for 'python2.7', '3.13', or a path."""
    if os.sep in spec:
        return spec if _version_of(spec) else None
    name = spec if spec.startswith('python') else 'python' + spec
    want = name[len('python'):]
    candidates = []
    for d in os.environ.get('PATH', '').split(os.pathsep):
        candidates.append(os.path.join(d, name))
    try:
        root = subprocess.check_output(['pyenv', 'root'], stderr=subprocess.STDOUT).decode().strip()
        candidates += sorted(glob.glob(os.path.join(root, 'versions', want + '*', 'bin', 'python')))
    except (OSError, subprocess.CalledProcessError):
        pass
    for c in candidates:
        v = _version_of(c) if os.path.exists(c) else None
        if v and (not want or v == want or v.startswith(want)):
            return c
    return None


def _ready(exe):
    code = 'import gevent, greenlet, msgpack, hdrh, tarantool, gloaddriver'
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.call([exe, '-c', code], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE) == 0


def ensure_env(spec, say):
    """The python of an environment where gloaddriver runs on ``spec``; built if need be."""
    exe = find_interpreter(spec)
    if exe is None:
        raise CompatError('interpreter %r not found (looked on PATH and in pyenv); install it '
                          'or pass a path to one' % spec)
    if _ready(exe):
        return exe
    version = _version_of(exe)
    venv = os.path.join(ROOT, '.venv', 'compat-%s' % version)
    py = os.path.join(venv, 'bin', 'python')
    if os.path.exists(py) and _ready(py):
        return py
    say('setting up %s for Python %s (first time only)' % (venv, version))
    try:
        if version.startswith('2.'):
            if subprocess.call([exe, '-m', 'virtualenv', '--version'], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE) != 0:
                _run([exe, '-m', 'pip', 'install', '-q', 'virtualenv<20.16'])
            _run([exe, '-m', 'virtualenv', '-q', venv])
        else:
            _run([exe, '-m', 'venv', venv])
            if version == '3.6':
                _run([py, '-m', 'pip', 'install', '-q', 'pip<22'])
        _run([py, '-m', 'pip', 'install', '-q', '--disable-pip-version-check', '-e', ROOT])
    except CompatError as e:
        raise CompatError('cannot set up Python %s (%s) for gloaddriver: %s' % (version, exe, e))
    if not _ready(py):
        raise CompatError('Python %s at %s still cannot import gloaddriver after setup' % (version, py))
    return py


def _run(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.communicate()[0].decode('utf-8', 'replace').strip().splitlines()
    if p.returncode != 0:
        raise CompatError('%s failed: %s' % (' '.join(cmd[:4]), out[-1] if out else p.returncode))
