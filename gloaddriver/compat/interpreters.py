"""The interpreters ``gloaddriver compat`` compares: found by name or path, and proven
able to run this gloaddriver before anything starts.

``--python`` takes a path (``/opt/py27/bin/python``) or a name (``python2.7``, or just
``2.7``) looked up on PATH, then in pyenv's versions, /usr/local/bin and /usr/bin.
Each side runs the gloaddriver its interpreter imports, in the environment this
command was started with: an installed package where it is installed, a checkout
where PYTHONPATH or an editable install points at one. Nothing is installed here;
an interpreter that cannot import gloaddriver, or imports another version of it, is
refused with one line that says what to do (exit 3).

Standard library and gloaddriver.errors only: scripts/envs.py, which makes a
checkout's .venv/pyXY, finds its interpreters with ``find`` too, before anything is
installed.
"""
from __future__ import absolute_import, division, print_function

import glob
import os
import subprocess

from gloaddriver import __version__, errors

# What a side imports to run the driver: the package and the dependencies it loads
# on every run.
_READY = ('import gevent, greenlet, msgpack, hdrh, tarantool, gloaddriver; '
          'print(gloaddriver.__version__)')
_VERSION = 'import sys; print("%d.%d" % sys.version_info[:2])'


def version_of(exe, env=None):
    """'X.Y' of the interpreter at ``exe``, or None when it does not run."""
    try:
        out = subprocess.check_output([exe, '-c', _VERSION], stderr=subprocess.STDOUT, env=env)
        return out.decode().strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def find(spec):
    """A path to a working interpreter for '2.7', 'python3.13', or a path to one; None
    when there is none."""
    if os.sep in spec:
        return spec if version_of(spec) else None
    name = spec if spec.startswith('python') else 'python' + spec
    want = name[len('python'):]
    candidates = [os.path.join(d, name) for d in os.environ.get('PATH', '').split(os.pathsep) if d]
    try:
        root = subprocess.check_output(['pyenv', 'root'], stderr=subprocess.STDOUT).decode().strip()
        candidates += sorted(glob.glob(os.path.join(root, 'versions', want + '*', 'bin', 'python')))
    except (OSError, subprocess.CalledProcessError):
        pass
    candidates += [os.path.join('/usr/local/bin', name), os.path.join('/usr/bin', name)]
    for c in candidates:
        v = version_of(c) if os.access(c, os.X_OK) else None
        if v and (not want or v == want or v.startswith(want + '.')):
            return c
    return None


def runs_gloaddriver(spec, env):
    """The path of the interpreter for ``spec`` when it runs this version of gloaddriver
    in ``env``; SetupError with the one line to show otherwise."""
    exe = find(spec)
    if exe is None:
        raise errors.SetupError('interpreter %r not found (looked on PATH, in pyenv, '
                                '/usr/local/bin and /usr/bin); install it or pass a path to '
                                'one' % spec)
    p = subprocess.Popen([exe, '-c', _READY], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
    out, err = p.communicate()
    if p.returncode != 0:
        lines = [l for l in err.decode('utf-8', 'replace').splitlines() if l.strip()]
        raise errors.SetupError(
            '%s cannot run gloaddriver (%s): pass the python of an environment where '
            'gloaddriver is installed (the README\'s venv27/bin/python for 2.7), or from a '
            'checkout run scripts/envs.py ensure X.Y and pass the python it prints'
            % (exe, lines[-1] if lines else 'exit %d' % p.returncode))
    theirs = (out.decode().strip().splitlines() or ['?'])[-1]
    if theirs != __version__:
        raise errors.SetupError('%s runs gloaddriver %s, this is %s: both sides must run the '
                                'same one' % (exe, theirs, __version__))
    return exe
