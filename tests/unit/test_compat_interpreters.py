"""How ``gloaddriver compat`` takes its interpreters (gloaddriver.compat.interpreters):
by path or by name, and only when they run this gloaddriver; real interpreters, some
behind a small shell wrapper that changes what they can import or say."""
from __future__ import absolute_import, division, print_function

import os
import stat
import sys

import pytest

import gloaddriver
from gloaddriver import errors
from gloaddriver.compat import interpreters

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(gloaddriver.__file__)))


def _wrapper(tmpdir, name, body):
    path = str(tmpdir.join(name))
    with open(path, 'w') as f:
        f.write('#!/bin/sh\n' + body + '\n')
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


def _env():
    return dict(os.environ, PYTHONPATH=ROOT)


def test_this_interpreter_runs_gloaddriver_by_path():
    assert interpreters.runs_gloaddriver(sys.executable, _env()) == sys.executable


def test_a_name_is_looked_up_on_path(tmpdir, monkeypatch):
    version = '%d.%d' % sys.version_info[:2]
    _wrapper(tmpdir, 'python' + version, 'exec "%s" "$@"' % sys.executable)
    monkeypatch.setenv('PATH', str(tmpdir) + os.pathsep + os.environ.get('PATH', ''))
    found = interpreters.find(version)
    assert found == str(tmpdir.join('python' + version))
    assert interpreters.version_of(found) == version


def test_an_interpreter_without_gloaddriver_is_one_line(tmpdir):
    # -E -S: no PYTHONPATH and no site-packages, so neither gloaddriver nor gevent
    bare = _wrapper(tmpdir, 'python-bare', 'exec "%s" -E -S "$@"' % sys.executable)
    with pytest.raises(errors.SetupError) as e:
        interpreters.runs_gloaddriver(bare, _env())
    line = str(e.value)
    assert 'cannot run gloaddriver' in line and 'No module named' in line
    assert 'scripts/envs.py ensure' in line and '\n' not in line
    assert 'venv27/bin/python' in line     # what README's install for 2.7 made


def test_one_python_is_compared_with_the_interpreter_running_compat():
    from gloaddriver.compat import check
    assert check.parse(['--python', '/opt/py27/bin/python']).python == [
        sys.executable, '/opt/py27/bin/python']
    assert check.parse(['--python', 'a', '--python', 'b']).python == ['a', 'b']
    with pytest.raises(SystemExit) as e:
        check.parse(['--python', 'a', '--python', 'b', '--python', 'c'])
    assert e.value.code == 2


def test_another_version_of_gloaddriver_is_refused(tmpdir):
    other = _wrapper(tmpdir, 'python-other', 'echo 0.0.9')
    with pytest.raises(errors.SetupError) as e:
        interpreters.runs_gloaddriver(other, _env())
    assert 'runs gloaddriver 0.0.9, this is %s' % gloaddriver.__version__ in str(e.value)


def test_a_missing_interpreter_is_not_found():
    assert interpreters.find('3.99') is None
    with pytest.raises(errors.SetupError) as e:
        interpreters.runs_gloaddriver('python3.99', _env())
    assert "'python3.99' not found" in str(e.value)
