"""``--sql`` on PostgreSQL: each op executes one statement, its parameters the values
``--args`` makes per op (workload.template, as Tarantool's --sql takes them).

One statement, two forms: the protocol's (``$1``, ``$2``..., what the pipelined connector
prepares and the pre-run check PREPAREs; ``?`` placeholders are numbered so), and
psycopg2's (``%s`` in the order the placeholders appear, every ``%`` doubled), which the
psycopg2 connector sends with the values in that order. Placeholders inside quoted
strings and identifiers are text, not placeholders.
"""
from __future__ import absolute_import, division, print_function

import random
import re

from gloaddriver import errors, workload

_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\$(\d+)|\?")


class Statement(object):
    """--sql as prepared (``text``), as psycopg2 takes it (``psycopg2``, with ``order``:
    the parameter of each of its ``%s``) and ``count``, the parameters it takes."""
    __slots__ = ('given', 'args', 'text', 'psycopg2', 'order', 'count')

    def __init__(self, sql, args='[]'):
        self.given = sql
        self.args = args            # --args as given (the manifest's)
        order = []
        marks = set()

        def number(m):
            if m.group(0).startswith(("'", '"')):
                return m.group(0)
            marks.add('?' if m.group(1) is None else '$')
            order.append(len(order) + 1 if m.group(1) is None else int(m.group(1)))
            return '$%d' % order[-1]
        self.text = _TOKEN.sub(number, sql)
        if len(marks) > 1:
            raise errors.ConfigError('--sql mixes ? and $n placeholders; use one kind: %s' % sql)
        self.order = tuple(order)
        self.count = max(order or [0])
        self.psycopg2 = _psycopg2_form(self.text)


def _psycopg2_form(text):
    """``text`` ($n placeholders) with each placeholder ``%s`` and every other ``%`` doubled."""
    out = []
    at = 0
    for m in _TOKEN.finditer(text):
        out.append(text[at:m.start()].replace('%', '%%'))
        out.append(m.group(0).replace('%', '%%') if m.group(1) is None else '%s')
        at = m.end()
    out.append(text[at:].replace('%', '%%'))
    return ''.join(out)


def compile_request(args):
    """(Statement, fill(key, rnd, worker)) of --sql and --args, checked against each
    other; (None, None) without --sql."""
    if not args.sql:
        if args.args is not None:
            raise errors.ConfigError('--args goes with --sql')
        return None, None
    from gloaddriver.workload.template import compile_args
    sql = args.sql if isinstance(args.sql, type(u'')) else args.sql.decode('utf-8')
    statement = Statement(sql, args.args or '[]')
    fill = compile_args(args.args or '[]', workload.values(args.value_size, args.seed))
    given = len(fill(0, random.Random(0), 0))
    if given != statement.count:
        raise errors.ConfigError('--sql has %d parameter%s ($n or ?) but --args gives %d '
                                 'value%s: %s' % (statement.count,
                                                  '' if statement.count == 1 else 's', given,
                                                  '' if given == 1 else 's', sql))
    return statement, fill


def psycopg2_op(run, statement, fill, rnd, worker):
    """The op of one worker on the psycopg2 connector: the statement with this op's
    values (``run``: pool.statement_runner's), its rows or its row count."""
    sql = statement.psycopg2
    order = statement.order
    if order == tuple(range(1, len(order) + 1)):
        def op(key):
            return run(sql, fill(key, rnd, worker), 'result')
    else:
        def op(key):
            values = fill(key, rnd, worker)
            return run(sql, [values[n - 1] for n in order], 'result')
    return op
