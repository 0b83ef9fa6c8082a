"""The server launcher: what it starts is its child, not ours (so our inherited syscall
counters never see it), it reports exits, says errors, and takes its children with it."""
from __future__ import absolute_import, division, print_function

import os
import sys
import time

import pytest

from gloaddriver.backends.launcher import Launcher


def _parent_of(pid):
    with open('/proc/%d/stat' % pid) as f:
        return int(f.read().rsplit(')', 1)[1].split()[1])


@pytest.fixture
def launcher():
    la = Launcher()
    yield la
    la.close()


def test_a_launched_process_is_the_launchers_child_and_its_exit_is_seen(launcher, tmpdir):
    out = str(tmpdir.join('out.log'))
    p = launcher.spawn([sys.executable, '-c', 'import sys, time; print("hi"); '
                        'sys.stdout.flush(); time.sleep(0.3); sys.exit(7)'],
                       str(tmpdir), dict(os.environ), out)
    assert _parent_of(p.pid) == launcher.proc.pid != os.getpid()
    assert p.poll() is None
    assert p.wait(timeout=30) == 7 and p.returncode == 7
    with open(out) as f:
        assert f.read().strip() == 'hi'


def test_a_launch_that_fails_says_why(launcher, tmpdir):
    with pytest.raises(OSError) as e:
        launcher.spawn(['/nonexistent/server'], str(tmpdir), dict(os.environ),
                       str(tmpdir.join('out.log')))
    assert 'No such file' in str(e.value) or 'nonexistent' in str(e.value)


def _alive(pid):
    """Running (a zombie waiting for init to reap it is dead)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (IOError, OSError):
        return False


def test_closing_the_launcher_ends_what_it_started(tmpdir):
    la = Launcher()
    p = la.spawn(['sleep', '60'], str(tmpdir), dict(os.environ), str(tmpdir.join('o.log')))
    assert _alive(p.pid)
    la.close()
    deadline = time.time() + 10
    while _alive(p.pid) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(p.pid)
