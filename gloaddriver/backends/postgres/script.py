"""``--script FILE.sql[@W]``: pgbench-style scripts, each run whole as one op.

The subset of pgbench's script language a user of it expects:

* SQL statements, each ending with ``;`` at the end of a line (one statement may
  span lines). ``BEGIN;`` ... ``END;`` (or ``COMMIT;``) make the script one
  transaction; without them each statement commits on its own.
* ``:name`` in a statement is a variable: one set by ``\\set``, or ``:key`` (the
  op's key, from --keys/--distribution), ``:client_id`` (the worker's number).
  ``::type`` casts are left alone.
* ``\\set name expression`` with integers, variables, ``+ - * / %``, parentheses
  and ``random(lb, ub)``, ``random_zipfian(lb, ub, s)``,
  ``random_exponential(lb, ub, p)``, drawn from the worker's seeded generator.
* ``-- comments``, blank lines.
* Several scripts: ``--script a.sql@9,b.sql@1`` runs one weighted mix (the
  weight after ``@``, 1 by default); each script is an op type in the report.

Statements are sent with their values bound by psycopg2, or, with --prepared,
as server-side prepared statements (PREPARE once per connection, EXECUTE per
op). A script that cannot be read or parsed is one line naming the file and
the line, exit 2.
"""
from __future__ import absolute_import, division, print_function

import io
import math
import os
import re
from collections import namedtuple

from gloaddriver import errors
from gloaddriver.workload import keys as keygen

BUILTIN_VARIABLES = ('key', 'client_id')
FUNCTIONS = ('random', 'random_zipfian', 'random_exponential')

Statement = namedtuple('Statement', 'line sql names prepared_sql control')
Script = namedtuple('Script', 'name path weight variables statements')

_VARIABLE = re.compile(r'(?<!:):([A-Za-z_][A-Za-z0-9_]*)')
_TOKEN = re.compile(r'\s*(?:(\d+(?:\.\d+)?)|:([A-Za-z_]\w*)|([A-Za-z_]\w*)|(\S))')
_CONTROL = re.compile(r'^\s*(BEGIN|START\s+TRANSACTION|END|COMMIT|ROLLBACK)\b', re.I)


def _random(rnd, lb, ub):
    return lb + int(rnd.random() * (ub - lb + 1))


def _random_exponential(rnd, lb, ub, parameter):
    # pgbench's formula: an exponential cut at ub, from the same uniform draw.
    cut = math.exp(-parameter)
    u = 1.0 - rnd.random()
    r = -math.log(cut + (1.0 - cut) * u) / parameter
    return lb + int((ub - lb + 1) * r)


_zipf = {}


def _random_zipfian(rnd, lb, ub, s):
    key = (id(rnd), ub - lb + 1, s)
    gen = _zipf.get(key)
    if gen is None:
        gen = _zipf[key] = keygen.zipfian(ub - lb + 1, rnd, start=lb, theta=s)
    return gen()


def _expression(text, known, where):
    """Python source of a \\set expression; raises ConfigError naming what is wrong."""
    out = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            break
        pos = m.end()
        number, var, name, other = m.groups()
        if number is not None:
            out.append(number)
        elif var is not None:
            if var not in known:
                raise errors.ConfigError('%s: variable :%s is not set before this line' % (where, var))
            out.append('v[%r]' % var)
        elif name is not None:
            if name not in FUNCTIONS:
                raise errors.ConfigError('%s: unknown function %s; gloaddriver knows %s'
                                         % (where, name, ', '.join(FUNCTIONS)))
            nxt = _TOKEN.match(text, pos)
            if not nxt or nxt.group(4) != '(':
                raise errors.ConfigError('%s: %s needs its arguments in parentheses' % (where, name))
            pos = nxt.end()
            out.append('_%s(rnd, ' % name)
        elif other in '+-*%(),':
            out.append(other)
        elif other == '/':
            out.append('//')   # pgbench's integer division
        else:
            raise errors.ConfigError('%s: unexpected %r in the expression' % (where, other))
    source = ' '.join(out)
    if not source:
        raise errors.ConfigError('%s: \\set needs an expression' % where)
    try:
        compile(source, where, 'eval')
    except SyntaxError:
        raise errors.ConfigError('%s: cannot parse the expression %r' % (where, text))
    return source


def _bind(sql, known, where):
    """(psycopg2 SQL with %(name)s, variable names in order of use, PREPARE-able SQL)."""
    names = []

    def pyformat(m):
        name = m.group(1)
        if name not in known:
            raise errors.ConfigError('%s: variable :%s is not set (\\set it, or use :key or '
                                     ':client_id)' % (where, name))
        names.append(name)
        return '%%(%s)s' % name
    escaped = sql.replace('%', '%%')
    bound = _VARIABLE.sub(pyformat, escaped)
    order = []
    for n in names:
        if n not in order:
            order.append(n)
    prepared = _VARIABLE.sub(lambda m: '$%d' % (order.index(m.group(1)) + 1), sql)
    return bound, tuple(order), prepared


def parse(spec, default_name=None):
    """A Script from ``FILE[@WEIGHT]``."""
    path, weight = spec, 1
    if '@' in spec:
        path, _, w = spec.rpartition('@')
        try:
            weight = int(w)
        except ValueError:
            raise errors.ConfigError('--script %s: the weight after @ must be a whole number'
                                     % spec)
        if weight < 0:
            raise errors.ConfigError('--script %s: the weight must not be negative' % spec)
    try:
        with io.open(path, encoding='utf-8') as f:
            lines = f.read().splitlines()
    except (IOError, OSError) as e:
        raise errors.ConfigError('--script %s: cannot read it: %s' % (path, e.strerror or e))
    name = default_name or os.path.splitext(os.path.basename(path))[0]
    known = set(BUILTIN_VARIABLES)
    sets, statements, pending, start = [], [], [], None
    for number, line in enumerate(lines, 1):
        where = 'script %s, line %d' % (path, number)
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith('--')):
            continue
        if not pending and stripped.startswith('\\'):
            parts = stripped[1:].split(None, 2)
            if not parts or parts[0] != 'set':
                raise errors.ConfigError('%s: \\%s is not supported; gloaddriver runs \\set'
                                         % (where, parts[0] if parts else ''))
            if len(parts) < 3 or not re.match(r'^[A-Za-z_]\w*$', parts[1]):
                raise errors.ConfigError('%s: write \\set NAME EXPRESSION' % where)
            if statements:
                raise errors.ConfigError('%s: put \\set lines before the statements' % where)
            sets.append((parts[1], _expression(parts[2], known, where)))
            known.add(parts[1])
            _try(sets, where)
            continue
        if not pending:
            start = number
        pending.append(line)
        if stripped.endswith(';'):
            statements.append(_statement('\n'.join(pending), known, path, start))
            pending = []
    if pending:
        statements.append(_statement('\n'.join(pending), known, path, start))
    if not statements:
        raise errors.ConfigError('script %s has no SQL statement' % path)
    _check_transactions(statements, path)
    return Script(name, path, weight, _variables_function(sets, path), tuple(statements))


def _try(sets, where):
    """Evaluate the \\set lines so far once, now: a wrong call (arguments, a zero
    parameter) is one line naming this line, not a failure of every op; and a
    zipfian's table is computed before the run, not inside the first op."""
    import random
    try:
        _variables_function(sets, where)(0, 0, random.Random(0))
    except Exception as e:
        raise errors.ConfigError('%s: the expression fails: %s: %s'
                                 % (where, e.__class__.__name__, e))


def _check_transactions(statements, path):
    """BEGIN without END (or COMMIT/ROLLBACK) would be rolled back after every op."""
    opened = None
    for s in statements:
        if not s.control:
            continue
        word = s.sql.split()[0].upper()
        if word in ('BEGIN', 'START'):
            opened = s.line
        else:
            opened = None
    if opened is not None:
        raise errors.ConfigError('script %s, line %d: BEGIN without END or COMMIT: the '
                                 'transaction would be rolled back after every run'
                                 % (path, opened))


def _statement(text, known, path, line):
    sql = text.strip()
    while sql.endswith(';'):
        sql = sql[:-1].rstrip()
    where = 'script %s, line %d' % (path, line)
    control = bool(_CONTROL.match(sql))
    bound, names, prepared = _bind(sql, known, where)
    return Statement(line, bound, names, prepared, control)


def parse_all(text):
    """Scripts from --script's value: FILE[@W][,FILE[@W]...] (given once or more)."""
    specs = []
    for part in text:
        specs += [s.strip() for s in part.split(',') if s.strip()]
    scripts = [parse(s) for s in specs]
    names = [s.name for s in scripts]
    for i, s in enumerate(scripts):
        if names.count(s.name) > 1:   # two files of one name: number them
            scripts[i] = s._replace(name='%s_%d' % (s.name, i + 1))
    if not any(s.weight for s in scripts):
        raise errors.ConfigError('--script: every script has weight 0')
    return tuple(scripts)


def _variables_function(sets, path):
    """variables(key, worker, rnd) -> the script's variables for one run of it, compiled
    once from its \\set lines."""
    lines = ['def variables(key, worker, rnd):', "    v = {'key': key, 'client_id': worker}"]
    lines += ['    v[%r] = %s' % (name, source) for name, source in sets]
    lines.append('    return v')
    ns = {'_random': _random, '_random_zipfian': _random_zipfian,
          '_random_exponential': _random_exponential}
    exec(compile('\n'.join(lines) + '\n', '<script %s>' % path, 'exec'), ns)
    return ns['variables']
