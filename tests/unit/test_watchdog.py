"""The per-test deadline kills what a hung test started, and only that."""
from __future__ import absolute_import, division, print_function

import io
import subprocess
import time

from tests.watchdog import Watchdog, descendants


def test_a_hung_child_and_its_own_child_are_killed_at_the_deadline():
    before = subprocess.Popen(['sleep', '30'])   # running before the test: left alone
    try:
        out = io.StringIO() if str is not bytes else io.BytesIO()
        dog = Watchdog(1.0, 'test_x', out=out).start()
        t0 = time.time()
        p = subprocess.Popen(['sh', '-c', 'sleep 60 & wait'])
        time.sleep(0.3)
        grandchild = descendants(p.pid)
        assert len(grandchild) == 1
        p.communicate()   # returns only because the watchdog kills the shell
        dog.stop()
        assert time.time() - t0 < 20
        assert p.returncode == -9
        assert sorted(dog.killed) == sorted([p.pid] + grandchild)
        assert 'watchdog: test_x still running after 1 s' in out.getvalue()
        assert before.poll() is None
    finally:
        before.kill()
        before.wait()


def test_a_test_that_ends_in_time_is_not_touched():
    dog = Watchdog(2.0, 'test_y').start()
    p = subprocess.Popen(['sleep', '0.2'])
    p.communicate()
    dog.stop()
    time.sleep(2.5)
    assert p.returncode == 0 and dog.killed == []
