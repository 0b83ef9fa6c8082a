"""pgbouncer's own errors, which share one SQLSTATE, told apart by what they say, on
both connectors' paths (psycopg2's message with its severity, the pipelined
connector's ErrorResponse fields)."""
from __future__ import absolute_import, division, print_function

import pytest

from gloaddriver.backends.postgres import replies, sqlstate


@pytest.mark.parametrize('message, kind, outage', [
    ('server conn crashed?', 'pooler:server_conn_crashed', True),
    ('FATAL:  server conn crashed?', 'pooler:server_conn_crashed', True),
    ('server login has been failing, try again later (server_login_retry)',
     'pooler:server_login_retry', True),
    ('ERROR:  query_wait_timeout', 'pooler:query_wait_timeout', True),
    ('no more connections allowed (max_client_conn)', 'pooler:max_client_conn', False),
])
def test_pgbouncers_errors_are_named_by_what_they_say(message, kind, outage):
    err = sqlstate.server_error('08P01', message)
    assert (err.kind, err.outage, err.code, err.message) == (kind, outage, '08P01', message)
    got = replies.server_error({'C': '08P01', 'M': message, 'S': 'FATAL'})
    assert (got.kind, got.outage) == (kind, outage)


def test_the_servers_own_errors_keep_their_sqlstate():
    err = sqlstate.server_error('26000', 'prepared statement "p" does not exist')
    assert (err.kind, err.outage) == ('server:26000', False)
    assert sqlstate.server_error('57P01', 'terminating connection').outage
    assert sqlstate.pooler_error('08006', 'server closed the connection unexpectedly') is None
