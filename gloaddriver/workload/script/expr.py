"""pgbench's expressions: a parser to a small tree, then one compile into closures.

``compile_expression(text, where, what)`` parses the text of a ``\\set`` or ``\\if``
(ConfigError naming ``where`` on a syntax error, an unknown function or a wrong
number of arguments) and returns ``evaluate(v, rnd)``: the value for the variables
``v`` (a dict) and the random source ``rnd``, raising ``errors.ScriptError`` named by
``where`` on a run-time error (an undefined variable, a division by zero, a bigint out
of range...).

The parser climbs operator precedence (Pratt) with pgbench's levels, lowest first::

    OR (right)  AND (right)  NOT (prefix)  IS [NOT] NULL|TRUE|FALSE, ISNULL, NOTNULL
    (postfix)  = <> != < <= > >= (non-associative)  | # & << >> (left; ~ prefix here)
    + - (left)  * / % (left)  unary - +

Prefix operators bind as in pgbench's grammar: ``~ 1 + 1`` is ``~(1 + 1)``, ``- 2 + 3``
is ``(-2) + 3``. Unary minus is ``0 - x`` and ``~x`` is ``x # -1``, as there.

The tree is compiled once into nested closures ``f(v, rnd)``: a node's kind is
decided at compile time, so evaluating does no dispatch on node types, only the
type checks of the values (int fast paths first). Pure sub-trees of constants are
folded; one that fails (``1 / 0`` in a branch never taken) is left to fail at run
time, where pgbench would fail too.
"""
from __future__ import absolute_import, division, print_function

import math
import operator

from gloaddriver import errors
from gloaddriver.workload.script import scanner
from gloaddriver.workload.script.functions import (
    FUNCTIONS, INT_MAX, INT_MIN, PLAIN, EvalError, as_int, c_mod, checked, convert, truthy)

# Binding levels (higher binds tighter) of the infix and postfix operators.
_OR, _AND, _NOT, _IS, _CMP, _BIT, _ADD, _MUL, _UNARY = range(1, 10)
_INFIX = {'OR': _OR, 'AND': _AND, '=': _CMP, '<>': _CMP, '!=': _CMP, '<': _CMP,
          '<=': _CMP, '>': _CMP, '>=': _CMP, '|': _BIT, '#': _BIT, '&': _BIT,
          '<<': _BIT, '>>': _BIT, '+': _ADD, '-': _ADD, '*': _MUL, '/': _MUL, '%': _MUL}
_POSTFIX = frozenset(['IS', 'ISNULL', 'NOTNULL'])
_RIGHT = frozenset([_OR, _AND])


class ParseError(Exception):
    """A syntax error at ``pos`` of the expression's text."""

    def __init__(self, message, pos):
        Exception.__init__(self, message)
        self.pos = pos


# -- parser: text -> tree ----------------------------------------------------------
# Nodes are tuples: ('const', value), ('var', name), ('op', symbol, a, b),
# ('and'|'or', a, b), ('not', a), ('is', a, None|True|False, negated),
# ('call', name, args), ('case', ((cond, value), ...), else_or_None).

class _Parser(object):

    def __init__(self, text):
        try:
            self.toks = scanner.tokens(text)
        except scanner.ScanError as e:
            raise ParseError(str(e), e.pos)
        self.i = 0

    def peek(self):
        return self.toks[self.i]

    def take(self, kind=None):
        tok = self.toks[self.i]
        if kind is not None and tok.kind != kind:
            raise self.unexpected(tok, 'expected %s' % kind)
        self.i += 1
        return tok

    def unexpected(self, tok, why=''):
        seen = 'the end' if tok.kind == 'eof' else '"%s"' % tok.value \
            if tok.kind not in ('int', 'double') else tok.value
        return ParseError('syntax error at %s%s' % (seen, ': ' + why if why else ''), tok.pos)

    def parse(self):
        node = self.expression(0)
        if self.peek().kind != 'eof':
            raise self.unexpected(self.peek())
        return node

    def expression(self, least):
        node = self.prefix()
        last = None
        while True:
            tok = self.peek()
            if tok.kind in _POSTFIX:
                level = _IS
            else:
                level = _INFIX.get(tok.kind)
                if level is None:
                    return node
            if level < least:
                return node
            if level == _CMP and last == _CMP:
                raise self.unexpected(tok, 'comparisons do not chain, use AND')
            self.i += 1
            if level == _IS:
                node = self.test(tok, node)
            else:
                if level in _RIGHT:
                    node = (tok.kind.lower(), node, self.expression(level))
                else:
                    node = ('op', tok.kind, node, self.expression(level + 1))
            last = level

    def test(self, tok, node):
        """The rest of IS [NOT] NULL|TRUE|FALSE, or ISNULL / NOTNULL."""
        if tok.kind != 'IS':
            return ('is', node, None, tok.kind == 'NOTNULL')
        negated = self.peek().kind == 'NOT'
        if negated:
            self.i += 1
        what = self.take()
        if what.kind not in ('NULL', 'TRUE', 'FALSE'):
            raise self.unexpected(what, 'IS takes NULL, TRUE or FALSE')
        return ('is', node, {'NULL': None, 'TRUE': True, 'FALSE': False}[what.kind], negated)

    def prefix(self):
        tok = self.take()
        kind = tok.kind
        if kind in ('int', 'double'):
            if kind == 'int' and tok.value > INT_MAX:
                raise ParseError('integer constant out of range (%d)' % tok.value, tok.pos)
            return ('const', tok.value)
        if kind == 'var':
            return ('var', tok.value)
        if kind in ('NULL', 'TRUE', 'FALSE'):
            return ('const', {'NULL': None, 'TRUE': True, 'FALSE': False}[kind])
        if kind == '(':
            node = self.expression(0)
            self.take(')')
            return node
        if kind == '-':
            nxt = self.peek()
            if nxt.kind == 'int' and nxt.value == INT_MAX + 1:   # the one literal only
                self.i += 1                                       # valid negated
                return ('const', INT_MIN)
            return ('op', '-', ('const', 0), self.expression(_UNARY))
        if kind == '+':
            return self.expression(_UNARY)
        if kind == '~':
            return ('op', '#', self.expression(_BIT + 1), ('const', -1))
        if kind == 'NOT':
            return ('not', self.expression(_NOT + 1))   # IS and tighter
        if kind == 'CASE':
            return self.case()
        if kind == 'func':
            return self.call(tok)
        raise self.unexpected(tok)

    def call(self, tok):
        if tok.value not in FUNCTIONS:
            raise ParseError('unknown function "%s"' % tok.value, tok.pos)
        self.take('(')
        args = []
        if self.peek().kind != ')':
            args.append(self.expression(0))
            while self.peek().kind == ',':
                self.i += 1
                args.append(self.expression(0))
        self.take(')')
        least, most = FUNCTIONS[tok.value][:2]
        if len(args) < least or (most is not None and len(args) > most):
            wanted = ('%d' % least if least == most else '%d or more' % least
                      if most is None else '%d to %d' % (least, most))
            raise ParseError('%s() takes %s argument%s, not %d'
                             % (tok.value, wanted, '' if wanted == '1' else 's', len(args)),
                             tok.pos)
        return ('call', tok.value, tuple(args))

    def case(self):
        arms = []
        while self.peek().kind == 'WHEN':
            self.i += 1
            cond = self.expression(0)
            self.take('THEN')
            arms.append((cond, self.expression(0)))
        if not arms:
            raise self.unexpected(self.peek(), 'CASE needs WHEN')
        other = None
        if self.peek().kind == 'ELSE':
            self.i += 1
            other = self.expression(0)
        self.take('END')
        return ('case', tuple(arms), other)


def parse(text):
    """The tree of an expression; raises ParseError."""
    return _Parser(text).parse()


# -- compiler: tree -> closures ----------------------------------------------------------

def _bool_error(a, b):
    to = 'double' if float in (type(a), type(b)) else 'int'
    return EvalError('cannot coerce boolean to %s' % to)


def _fdiv(a, b):
    if b == 0.0:   # IEEE, as C: x/0 is an infinity, 0/0 NaN (Python raises)
        if a == 0.0 or a != a:
            return float('nan')
        return math.copysign(float('inf'), a) * math.copysign(1.0, b)
    return a / b


def _idiv(a, b):
    if b == 0:
        raise EvalError('division by zero')
    q = abs(a) // abs(b)   # C truncates toward zero
    return checked(-q if (a < 0) != (b < 0) else q)


_FLOAT_OPS = {'+': operator.add, '-': operator.sub, '*': operator.mul, '/': _fdiv}
_INT_OPS = {'+': operator.add, '-': operator.sub, '*': operator.mul, '/': _idiv}


def _arith_slow(symbol, a, b):
    """+ - * / off the int fast path: NULL, doubles, booleans (an error), 2.7's long."""
    if a is None or b is None:
        return None
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        raise _bool_error(a, b)
    if ta is float or tb is float:
        return _FLOAT_OPS[symbol](float(a), float(b))
    return checked(_INT_OPS[symbol](a, b))


def _arith(symbol, fa, fb):
    """+ - *: ints stay ints (out of int64 is an error), a double makes a double."""
    slow = _arith_slow
    lo, hi = INT_MIN, INT_MAX
    if symbol == '+':
        def add(v, rnd):
            a, b = fa(v, rnd), fb(v, rnd)
            if type(a) is int and type(b) is int:
                r = a + b
                if lo <= r <= hi:
                    return r
                raise EvalError('bigint out of range')
            return slow('+', a, b)
        return add
    if symbol == '-':
        def sub(v, rnd):
            a, b = fa(v, rnd), fb(v, rnd)
            if type(a) is int and type(b) is int:
                r = a - b
                if lo <= r <= hi:
                    return r
                raise EvalError('bigint out of range')
            return slow('-', a, b)
        return sub

    def mul(v, rnd):
        a, b = fa(v, rnd), fb(v, rnd)
        if type(a) is int and type(b) is int:
            r = a * b
            if lo <= r <= hi:
                return r
            raise EvalError('bigint out of range')
        return slow('*', a, b)
    return mul


def _divide(fa, fb):
    def div(v, rnd):
        a, b = fa(v, rnd), fb(v, rnd)
        if type(a) is int and type(b) is int:
            return _idiv(a, b)
        return _arith_slow('/', a, b)
    return div


def _shift_left(a, b):
    # The count as x86 takes it (pgbench 15 gives 1 << 64 == 1); a result past int64
    # is an error here, where C would wrap.
    return checked(a << (b & 63))


_INT_ONLY = {'%': c_mod, '|': operator.or_, '&': operator.and_, '#': operator.xor,
             '<<': _shift_left, '>>': lambda a, b: a >> (b & 63)}


def _int_only(symbol, fa, fb):
    """% and the bitwise operators: integers (a double is rounded to one)."""
    fn = _INT_ONLY[symbol]

    def int_op(v, rnd):
        a, b = fa(v, rnd), fb(v, rnd)
        if type(a) is int and type(b) is int:
            return fn(a, b)
        if a is None or b is None:
            return None
        return fn(as_int(a), as_int(b))
    return int_op


_COMPARE = {'=': operator.eq, '<>': operator.ne, '!=': operator.ne, '<': operator.lt,
            '<=': operator.le, '>': operator.gt, '>=': operator.ge}


def _compare(symbol, fa, fb):
    """Comparisons: of two ints as ints, else as doubles; booleans are an error (as in
    pgbench: ``true = true`` fails there)."""
    fn = _COMPARE[symbol]

    def compare(v, rnd):
        a, b = fa(v, rnd), fb(v, rnd)
        ta, tb = type(a), type(b)
        if ta is int and tb is int:
            return fn(a, b)
        if a is None or b is None:
            return None
        if ta is bool or tb is bool:
            raise _bool_error(a, b)
        if ta is float or tb is float:
            return fn(float(a), float(b))
        return fn(a, b)
    return compare


def _logic(kind, fa, fb):
    """AND / OR, lazily like pgbench: a NULL first operand gives NULL; else the first
    decides when it can, and the second (NULL or its truth) otherwise. Numbers are
    read as conditions (the doc's ``5 or 0`` is TRUE; pgbench 15 itself refuses them)."""
    if kind == 'and':
        def and_(v, rnd):
            a = fa(v, rnd)
            if a is None:
                return None
            if not truthy(a):
                return False
            b = fb(v, rnd)
            return None if b is None else truthy(b)
        return and_

    def or_(v, rnd):
        a = fa(v, rnd)
        if a is None:
            return None
        if truthy(a):
            return True
        b = fb(v, rnd)
        return None if b is None else truthy(b)
    return or_


def _not(fa):
    def not_(v, rnd):
        a = fa(v, rnd)
        return None if a is None else not truthy(a)
    return not_


def _is(fa, what, negated):
    """IS [NOT] NULL|TRUE|FALSE: never NULL; TRUE and FALSE match only booleans
    (pgbench 15: ``1 is true`` is false)."""
    if negated:
        return lambda v, rnd: fa(v, rnd) is not what
    return lambda v, rnd: fa(v, rnd) is what


def _case(arms, other):
    def case(v, rnd):
        for cond, value in arms:
            if truthy(cond(v, rnd)):
                return value(v, rnd)
        return other(v, rnd) if other is not None else None
    return case


def _variable(name):
    plain = PLAIN

    def variable(v, rnd):
        try:
            x = v[name]
        except KeyError:
            raise EvalError('undefined variable "%s"' % name)
        if type(x) in plain:
            return x
        return convert(x, name)
    return variable


def _constant(value):
    return lambda v, rnd: value


def _op(symbol, fa, fb):
    if symbol in ('+', '-', '*'):
        return _arith(symbol, fa, fb)
    if symbol == '/':
        return _divide(fa, fb)
    if symbol in _COMPARE:
        return _compare(symbol, fa, fb)
    return _int_only(symbol, fa, fb)


def _compile(node, where):
    """(closure, pure): pure when the value cannot change from one run to the next."""
    kind = node[0]
    if kind == 'const':
        return _constant(node[1]), True
    if kind == 'var':
        return _variable(node[1]), False
    if kind == 'call':
        parts = [_compile(arg, where) for arg in node[2]]
        build, pure = FUNCTIONS[node[1]][2:]
        fn = build([f for f, _ in parts], where, _variable('default_seed'))
        return _fold(fn, pure and all(p for _, p in parts))
    if kind == 'case':
        arms = [(_compile(c, where), _compile(x, where)) for c, x in node[1]]
        other = _compile(node[2], where) if node[2] is not None else None
        fn = _case(tuple((c[0], x[0]) for c, x in arms), other and other[0])
        pure = all(c[1] and x[1] for c, x in arms) and (other is None or other[1])
        return _fold(fn, pure)
    if kind == 'op':
        (fa, pa), (fb, pb) = _compile(node[2], where), _compile(node[3], where)
        return _fold(_op(node[1], fa, fb), pa and pb)
    if kind in ('and', 'or'):
        (fa, pa), (fb, pb) = _compile(node[1], where), _compile(node[2], where)
        return _fold(_logic(kind, fa, fb), pa and pb)
    if kind == 'not':
        fa, pa = _compile(node[1], where)
        return _fold(_not(fa), pa)
    fa, pa = _compile(node[1], where)          # 'is'
    return _fold(_is(fa, node[2], node[3]), pa)


def _fold(fn, pure):
    """A pure closure as its constant, unless evaluating it fails: then it fails when
    (and only if) a run reaches it. (hash() and permute() without their seed read
    :default_seed, undefined here, so they are never folded.)"""
    if not pure:
        return fn, False
    try:
        return _constant(fn({}, None)), True
    except EvalError:
        return fn, False


class _Unset(dict):
    """The variables of a trial evaluation: reading any of them ends the trial."""

    def __missing__(self, name):
        raise _Unread()


class _Unread(Exception):
    pass


def _try_once(fn, where, what):
    """Evaluate once before the run, with a throwaway generator and no variables: an
    expression that fails before it reads any variable (``random(5, 1)``, a zipfian's
    parameter out of range, ``1 / 0``) fails on every run, so it is a ConfigError naming
    its line now, not a failure of every op. One that reads a variable is judged as it
    runs (the variable decides)."""
    import random
    try:
        fn(_Unset(default_seed=0), random.Random(0))
    except _Unread:
        pass
    except EvalError as e:
        if 'undefined variable' not in str(e):
            raise errors.ConfigError('%s: %s: %s (whatever the variables hold)'
                                     % (where, what, e))


def compile_expression(text, where, what='expression'):
    """evaluate(v, rnd) of an expression's text; ConfigError on a syntax error.

    ``where`` ('script F, line N') prefixes every message; ``what`` (the meta-command,
    e.g. '\\set aid') says which part of the line is wrong."""
    try:
        node = parse(text)
    except ParseError as e:
        hint = ' (-- starts no comment in an expression)' if '--' in text else ''
        raise errors.ConfigError('%s: %s: %s (column %d of "%s")%s'
                                 % (where, what, e, e.pos + 1, text, hint))
    fn = _compile(node, where)[0]
    if 'debug' not in text.lower():     # debug() would print its trial value
        _try_once(fn, where, what)
    script_error = errors.ScriptError

    def evaluate(v, rnd):
        try:
            return fn(v, rnd)
        except EvalError as e:
            err = script_error('%s: %s' % (where, e))
        raise err   # outside the except: 3.x chains no "during handling of" EvalError
    evaluate.tree, evaluate.where = node, where     # what codegen writes out as Python
    return evaluate
