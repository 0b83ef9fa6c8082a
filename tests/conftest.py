"""Every test runs under a deadline (tests/watchdog.py): a hang fails that test."""
from __future__ import absolute_import, division, print_function

import os

import pytest

from tests.watchdog import DEFAULT_SECONDS, Watchdog

_stderr = []   # the run's own stderr, for faulthandler's stacks (not a test's capture)


def pytest_configure(config):
    config.addinivalue_line('markers', 'deadline(seconds): this test\'s own watchdog '
                                       'deadline (default %d s)' % DEFAULT_SECONDS)
    capman = config.pluginmanager.getplugin('capturemanager')
    if capman is not None:
        with capman.global_and_fixture_disabled():
            _stderr.append(os.fdopen(os.dup(2), 'w'))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    mark = item.get_closest_marker('deadline')
    seconds = mark.args[0] if mark is not None else DEFAULT_SECONDS
    dog = Watchdog(seconds, item.nodeid, dump_to=_stderr[0] if _stderr else None).start()
    try:
        yield
    finally:
        dog.stop()
