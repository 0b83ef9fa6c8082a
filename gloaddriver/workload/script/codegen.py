"""Straight runs of a script's commands as one Python function each, written once per
script and compiled, so that a transaction is one call, not a call per command and
per node of every expression.

``expr.compile_expression`` makes closures, a call per node; what a transaction pays
for a ``\\set`` is then a call for each constant, variable, operator and function in
it. Here an expression becomes Python statements in the body of the function that runs
its command, with the int fast paths of the closures written out (``type(a) is int``,
the int64 range check, random()'s draw); any other case (NULL, doubles, booleans, text
read as a number) calls the same slow paths the closures call, and a node this module
does not write out (AND/OR, CASE, comparisons, other functions) calls its closure.
So the values, the draws and the errors are the closures' (tests/unit/test_script_expr.py
runs every case both ways).

``Writer`` collects the lines and the names the code reads (constants, closures,
helpers, its variables dict ``v`` and random source ``rnd``); ``expression(node)``
writes the statements of one expression and returns the name that holds its value.
``function(name, args, body, names)`` compiles a function of such lines.

An error is raised as the closures raise it, an ``EvalError`` (``undefined
variable`` from a KeyError of ``v``): the caller turns it into the ScriptError that
names the command's line (``raise_at``).
"""
from __future__ import absolute_import, division, print_function

from gloaddriver import errors
from gloaddriver.workload.script import expr as expressions
from gloaddriver.workload.script.functions import (
    INT_MAX, INT_MIN, PLAIN, EvalError, as_int, convert, draw_random)

_EXACT = 1 << 53
_SMALL = 1 << 31


def _plain(x, name):
    """A variable's value that is not an int, as an expression reads it."""
    if type(x) in PLAIN:
        return x
    return convert(x, name)


class Writer(object):
    """Lines of a function body and the names they read."""

    def __init__(self, names=None):
        self.lines = []
        self.names = {} if names is None else names
        self.names.update(_INT_MIN=INT_MIN, _INT_MAX=INT_MAX, _EvalError=EvalError,
                          _plain=_plain, _arith=expressions._arith_slow,
                          _draw=draw_random, _EXACT=_EXACT)
        self.count = 0

    def bind(self, value, prefix='_k'):
        """A name of the code's namespace holding ``value``."""
        self.count += 1
        name = '%s%d' % (prefix, self.count)
        self.names[name] = value
        return name

    def temp(self):
        self.count += 1
        return 't%d' % self.count

    def line(self, text, indent=0):
        self.lines.append('    ' * indent + text)

    # -- expressions ------------------------------------------------------------------

    def expression(self, node, where, indent=0):
        """The name holding ``node``'s value once the lines written now have run."""
        fn, pure = expressions._compile(node, where)
        if pure:      # folded to its constant when the script was compiled
            value = fn({}, None)
            # A small int written as it is: no type check of it runs. (Not a large one:
            # 2.7 reads -9223372036854775808 in parentheses as a long.)
            if type(value) is int and -_SMALL < value < _SMALL:
                return '(%d)' % value
            return self.bind(value)
        kind = node[0]
        if kind == 'var':
            return self.variable(node[1], indent)
        if kind == 'op' and node[1] in ('+', '-', '*'):
            return self.arith(node, where, indent)
        if kind == 'call' and node[1] == 'random':
            return self.random(node, where, indent)
        t = self.temp()      # anything else: its closure
        self.line('%s = %s(v, rnd)' % (t, self.bind(fn, '_f')), indent)
        return t

    def variable(self, name, indent):
        t = self.temp()
        key = self.bind(name, '_n')
        self.line('%s = v[%s]' % (t, key), indent)
        self.line('if %s.__class__ is not int: %s = _plain(%s, %s)' % (t, t, t, key), indent)
        return t

    def arith(self, node, where, indent):
        a = self.expression(node[2], where, indent)
        b = self.expression(node[3], where, indent)
        t = self.temp()
        self.line('if %s:' % _ints(a, b), indent)
        self.line('%s = %s %s %s' % (t, a, node[1], b), indent + 1)
        self.line('if not _INT_MIN <= %s <= _INT_MAX: '
                  'raise _EvalError("bigint out of range")' % t, indent + 1)
        self.line('else:', indent)
        self.line('%s = _arith(%r, %s, %s)' % (t, str(node[1]), a, b), indent + 1)
        return t

    def random(self, node, where, indent):
        lb = self.expression(node[2][0], where, indent)
        ub = self.expression(node[2][1], where, indent)
        t = self.temp()
        if _literal(lb) and _literal(ub):
            n = int(ub[1:-1]) - int(lb[1:-1]) + 1
            if 0 < n <= _EXACT:       # the draw's range known now
                self.line('%s = %s + int(_random() * %d)' % (t, lb, n), indent)
                return t
        self.line('if %s and 0 < %s - %s + 1 <= _EXACT:' % (_ints(lb, ub), ub, lb), indent)
        self.line('%s = %s + int(_random() * (%s - %s + 1))' % (t, lb, ub, lb), indent + 1)
        self.line('else:', indent)
        self.line('%s = _draw(rnd, %s, %s)' % (t, lb, ub), indent + 1)
        return t


def _literal(name):
    """Whether an expression's name is an int written as it is: '(5)'."""
    return name.startswith('(')


def _ints(*names):
    """The condition that the values of ``names`` are ints ('True' when all are int
    literals)."""
    checks = ['%s.__class__ is int' % n for n in names if not _literal(n)]
    return ' and '.join(checks) or 'True'


def function(name, args, lines, names):
    """The function ``def name(args): lines`` compiled in namespace ``names`` (which must
    bind ``v`` and ``rnd`` when the lines read them, and ``_random`` as ``rnd.random``)."""
    source = 'def %s(%s):\n%s\n' % (name, args, '\n'.join('    ' + l for l in lines))
    code = compile(source, '<script %s>' % name, 'exec')
    return code, source


def make(code, name, names):
    """The function ``name`` of compiled ``code`` with the namespace ``names``."""
    namespace = dict(names)
    exec(code, namespace)
    return namespace[name]


def raise_at(exc, where):
    """The ScriptError an EvalError or a KeyError of a variable's read means at
    ``where`` (what the closures raise there)."""
    if isinstance(exc, KeyError):
        return errors.ScriptError('%s: undefined variable "%s"' % (where, exc.args[0]))
    return errors.ScriptError('%s: %s' % (where, exc))


def evaluator(evaluate):
    """``evaluate`` (a compile_expression closure) as one compiled function of the same
    values and errors: what the tests compare with the closures."""
    node, where = evaluate.tree, evaluate.where
    w = Writer()
    result = w.expression(node, where, 1)
    lines = ['_random = rnd.random', 'try:'] + w.lines + [
        '    return %s' % result,
        'except (_EvalError, KeyError) as e:', '    err = _raise_at(e, _where)',
        'raise err']
    w.names.update(_raise_at=raise_at, _where=where)
    code, _source = function('evaluate', 'v, rnd', lines, w.names)
    return make(code, 'evaluate', w.names)
