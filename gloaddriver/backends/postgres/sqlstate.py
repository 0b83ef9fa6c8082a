"""What a PostgreSQL SQLSTATE means to the run, for both connectors (psycopg2's pool
and the pipelined connection), and the errors a pooler in front of the server gives in
the server's place.

pgbouncer answers with a generic SQLSTATE (08P01 mostly) whatever went wrong, so its
errors are told apart by their message and counted by what they mean, as
``pooler:NAME`` (``pooler:server_login_retry``, ``pooler:server_conn_crashed``...),
each marked an outage when it says that the server could not be reached.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver import errors

# pgbouncer 1.18's error messages (the start of each, lower case) -> (kind, outage).
POOLER_ERRORS = (
    ('server login has been failing', 'server_login_retry', True),
    ('server conn crashed', 'server_conn_crashed', True),
    ('pgbouncer cannot connect to server', 'cannot_connect', True),
    ('client_login_timeout (server down)', 'server_down', True),
    ('query_wait_timeout', 'query_wait_timeout', True),
    ('no more connections allowed', 'max_client_conn', False),
    ('query_timeout', 'query_timeout', False),
    ('idle transaction timeout', 'idle_transaction_timeout', False),
    ('transaction blocks not allowed', 'statement_mode', False),
)

# Those said before the statement reached any server (no server connection to give it):
# a write that failed so surely did nothing (--verify: not an outcome unknown).
UNSENT = ('server_login_retry', 'cannot_connect', 'server_down', 'query_wait_timeout')


def is_outage(code):
    """Class 08 (connection exception) and 57P (shutting down, crashed, not yet
    accepting connections): the server is going or not yet back, an outage rather than
    an answer to the statement."""
    return code[:2] == '08' or code[:3] == '57P'


def pooler_error(code, message):
    """The ServerError of one of pgbouncer's own errors, or None when ``message`` is not
    one. Its severity may lead the text (psycopg2's pgerror: ``FATAL:  server conn
    crashed?``)."""
    low = message.lower()
    for severity in ('error:', 'fatal:'):
        if low.startswith(severity):
            low = low[len(severity):].lstrip()
            break
    for start, name, outage in POOLER_ERRORS:
        if low.startswith(start):
            err = errors.ServerError(code, message, outage)
            err.kind = 'pooler:' + name
            err.unsent = name in UNSENT
            return err
    return None


def server_error(code, message):
    """The ServerError of an error the server (or a pooler in its place) answered."""
    return pooler_error(code, message) or errors.ServerError(code, message, is_outage(code))
