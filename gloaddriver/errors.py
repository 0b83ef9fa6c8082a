"""One documented exception tree for everything gloaddriver raises.

::

    GloadError                  anything the driver reports to a user
    +-- ConfigError             bad flags or profile (exit code 2)
    +-- SetupError              the run cannot start: server, auth, schema (exit 3)
    |   +-- ConnectError        the server could not be reached at all
    |   +-- AuthError           the server refused the credentials
    |   +-- SchemaError         a space/index/table the workload needs is missing
    +-- OpError                 one operation failed; the run goes on and counts it
        +-- NetworkError        the transport failed: refused, reset, EOF, lost
        |   +-- NotConnected    no connection now (reconnecting); fails fast
        |   +-- GaveUp          the server stayed unreachable past --outage-limit
        +-- RequestTimeout      no reply within the request timeout
        +-- ServerError         the server replied with an error (code, message)
        +-- ScriptError         a --script failed in the client: an undefined variable,
                                a division by zero, a bigint out of range

Network and server errors are separate branches on purpose: a load driver has to
tell "the server said no" (a result) from "we could not ask" (an outage). Each
OpError has a ``kind`` used as the key in the per-phase error counts, and
``outage``: whether it means the server could not serve at all (network errors,
timeouts, and the server errors a backend marks so, such as "shutting down" or
"still starting"), which is what opens an outage event (measure/outages.py).

The exit codes live here too, with the one function that maps an error to its
code and its line on stderr (``report_error``): every entry point uses it.
"""
from __future__ import absolute_import, division, print_function

import sys

EXIT_OK = 0            # every op succeeded
EXIT_OPS_FAILED = 1    # some ops failed or timed out, or the run was aborted
EXIT_USAGE = 2         # bad flags, profile or input file
EXIT_SETUP = 3         # the run could not start: server, auth, schema
EXIT_THRESHOLD = 4     # a --fail-if threshold did not hold (or an @abort one stopped the run)
EXIT_CLIENT_LIMIT = 5  # --find-max: the client could not keep a step's rate (no knee)
EXIT_INTERRUPTED = 130
INTERRUPTED = 'interrupted'   # the "aborted" reason of a run stopped by SIGINT or SIGTERM

# Every code with what it means to a user: the one list that --help, docs/cli.md,
# README.md and docs/report.md show (scripts/docsgen.py writes it into each; the docs
# tests fail when one of them says otherwise). Markdown: backticks are code.
EXIT_CODES = (
    (EXIT_OK, 'every op succeeded (with `--fail-if`: every threshold held; with '
              '`--find-max`: the search ended with a knee, or held up to its last step); '
              '`compat`: no check failed'),
    (EXIT_OPS_FAILED, 'some ops failed or timed out, the run was aborted (server gone past '
                      '`--outage-limit`, or lost while a later phase was being set up: the '
                      'phases that ran are written), `--verify` found an acknowledged '
                      'write lost, or an output file could not be written at the end (the '
                      'others are); `compat`: a check failed'),
    (EXIT_USAGE, 'bad flags, profile or input file (a workload file, a script, a result '
                 'file for `compare`, `merge` or `html`): one line on stderr says which'),
    (EXIT_SETUP, 'the run could not start: server unreachable, wrong password, a missing '
                 'space or table, a statement the server refuses before the run, a port '
                 'that cannot be had (`--web`, `--prometheus-port`); `compat`: an '
                 'interpreter that cannot run gloaddriver'),
    (EXIT_THRESHOLD, 'a `--fail-if` threshold did not hold, or one marked `@abort` broke '
                     'while the run went and stopped it (what ran is reported); '
                     '`--find-max`: no rate tried held the objective'),
    (EXIT_CLIENT_LIMIT, '`--find-max`: the client could not keep a step\'s rate (its CPU, or '
                        'too few greenlets), so the search found the client\'s limit, not '
                        'the server\'s knee: add `--processes` or `--greenlets`'),
    (EXIT_INTERRUPTED, 'interrupted (SIGINT or SIGTERM); what ran is still reported'),
)


class GloadError(Exception):
    """Base of every error the driver reports; str() is one line for a user."""


class ConfigError(GloadError):
    """A flag, environment variable or profile value is wrong."""


class SetupError(GloadError):
    """The run cannot start: the message says what is wrong and what to do."""


class ConnectError(SetupError):
    """The server could not be reached."""


class AuthError(SetupError):
    """The server refused the user name or password."""


class SchemaError(SetupError):
    """A space, index or table the workload needs does not exist."""


class OpError(GloadError):
    """One operation failed; ``kind`` is its key in the error counts."""
    kind = 'error'
    outage = False


class NetworkError(OpError):
    """The connection failed (refused, reset, closed, lost mid-request)."""
    kind = 'network'
    outage = True


class NotConnected(NetworkError):
    """The connection is down and did not come back within the timeout."""


class GaveUp(NetworkError):
    """The server has been unreachable for longer than the outage limit."""


class RequestTimeout(OpError):
    """No reply arrived within the request timeout."""
    kind = 'timeout'
    outage = True


class ServerError(OpError):
    """The server answered with an error.

    ``code`` is the server's own error code (Tarantool box error code, or a
    PostgreSQL SQLSTATE) and ``kind`` is ``server:<code>`` so counts by kind
    keep different server errors apart. ``outage`` marks the errors a server gives
    while it cannot serve at all (shutting down, still starting).
    """

    def __init__(self, code, message, outage=False):
        OpError.__init__(self, message)
        self.code = code
        self.message = message
        self.kind = 'server:%s' % (code,)
        self.outage = outage

    def __str__(self):
        return '%s (code %s)' % (self.message, self.code)


class ScriptError(OpError):
    """A script's own command failed in the client (pgbench's run-time errors): the
    message names the script and its line."""
    kind = 'script'


def say(text):
    """One line on stderr, as the driver speaks to a user."""
    sys.stderr.write('gloaddriver: %s\n' % text)
    sys.stderr.flush()


def report_error(exc):
    """Say what went wrong in one line; return the exit code it means."""
    if isinstance(exc, ConfigError):
        say('error: %s' % exc)
        return EXIT_USAGE
    if isinstance(exc, KeyboardInterrupt):
        say('interrupted')
        return EXIT_INTERRUPTED
    say(str(exc))
    return EXIT_SETUP
