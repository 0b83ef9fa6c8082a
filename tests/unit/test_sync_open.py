"""The sync connector opens its connections side by side: a failure is one error."""
from __future__ import absolute_import, division, print_function

import pytest

from gloaddriver import errors
from gloaddriver.backends.tarantool.sync import _spawn_all


class _Conn(object):
    closed = False

    def close(self):
        self.closed = True


def test_a_connection_that_cannot_be_opened_is_one_error_and_no_traceback(capfd):
    opened = []

    def ok():
        c = _Conn()
        opened.append(c)
        return c

    def refused():
        raise errors.ConnectError('cannot connect to Tarantool at 127.0.0.1:1: refused')
    with pytest.raises(errors.ConnectError):
        _spawn_all([ok, refused, ok, refused])
    _out, err = capfd.readouterr()
    # gevent prints the traceback of a greenlet that dies of an exception
    assert 'Traceback' not in err and 'failed with' not in err, err
    assert len(opened) == 2 and all(c.closed for c in opened)


def test_connections_that_open_come_back_in_order():
    conns = [_Conn() for _i in range(3)]
    assert _spawn_all([lambda c=c: c for c in conns]) == conns
