"""Every test runs under a deadline (tests/watchdog.py): a hang fails that test."""
from __future__ import absolute_import, division, print_function

import pytest

from tests.watchdog import DEFAULT_SECONDS, Watchdog


def pytest_configure(config):
    config.addinivalue_line('markers', 'deadline(seconds): this test\'s own watchdog '
                                       'deadline (default %d s)' % DEFAULT_SECONDS)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    mark = item.get_closest_marker('deadline')
    seconds = mark.args[0] if mark is not None else DEFAULT_SECONDS
    dog = Watchdog(seconds, item.nodeid).start()
    try:
        yield
    finally:
        dog.stop()
