"""pgbench's three built-in scripts, and their lookup by name or unambiguous prefix.

The statements and \\set lines are the ones pgbench 15 runs (``pgbench
--show-script=NAME`` prints them; the tests compare), over its four tables
(pgbench_accounts, _branches, _tellers, _history), with :scale the scale factor.
``DESCRIPTIONS`` holds what pgbench prints as their "transaction type".
"""
from __future__ import absolute_import, division, print_function

from gloaddriver import errors
from gloaddriver.workload.script.parse import parse_text, split_weight

_DRAWS = r"""\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
"""

_ACCOUNT = """UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
"""

_HISTORY = """INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) \
VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
"""

# (name, pgbench's description, text), in pgbench's order.
SCRIPTS = (
    ('tpcb-like', '<builtin: TPC-B (sort of)>',
     _DRAWS + 'BEGIN;\n' + _ACCOUNT +
     'UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n'
     'UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;\n' +
     _HISTORY + 'END;\n'),
    ('simple-update', '<builtin: simple update>',
     _DRAWS + 'BEGIN;\n' + _ACCOUNT + _HISTORY + 'END;\n'),
    ('select-only', '<builtin: select only>',
     '\\set aid random(1, 100000 * :scale)\n'
     'SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n'),
)
NAMES = tuple(name for name, _, _ in SCRIPTS)
DESCRIPTIONS = dict((name, description) for name, description, _ in SCRIPTS)
TEXTS = dict((name, text) for name, _, text in SCRIPTS)


def find(name):
    """The built-in script's full name for a name or an unambiguous prefix of one
    (``t`` is tpcb-like, ``si`` simple-update, ``se`` select-only; ``s`` is both)."""
    if name in TEXTS:
        return name
    found = [n for n in NAMES if n.startswith(name)] if name else []
    if len(found) == 1:
        return found[0]
    known = 'the built-in scripts are %s' % ', '.join(NAMES)
    if found:
        raise errors.ConfigError('--builtin %s is ambiguous: it starts %s; %s'
                                 % (name, ' and '.join(found), known))
    raise errors.ConfigError('--builtin %s: no such built-in script; %s' % (name, known))


def builtin(spec):
    """The Script of 'NAME[@W]' (a name or an unambiguous prefix), named by its full name,
    its path '<builtin: NAME>'."""
    name, weight = split_weight(spec, '--builtin')
    name = find(name)
    return parse_text(TEXTS[name], '<builtin: %s>' % name, name, weight)
