"""Values, built-in functions and random draws of pgbench's script language.

Values are Python's: int (kept within int64), float (pgbench's double), bool, None
(NULL), and text (str/unicode: what -D, \\gset and \\setshell store), read as a number
or a boolean when an expression uses it, as pgbench reads a variable's text.

Each function is a *builder*: given the compiled argument closures it returns one
closure ``f(v, rnd)``, so a call does no lookups by name while a script runs. Every
random draw uses only ``rnd.random()``: its floats are the same on 2.7 and 3.x for
one integer seed (``randint``, ``randrange`` and ``gauss`` are not).

Run-time problems raise ``EvalError`` (a message without a place); the expression's
top closure turns it into ``errors.ScriptError`` naming the script and the line.
"""
from __future__ import absolute_import, division, print_function

import math
import numbers
import re
import sys

from gloaddriver.py23 import PY2

INT_MIN = int(-(1 << 63))   # int(): an int on 2.7 too, not a long
INT_MAX = int((1 << 63) - 1)
_M64 = (1 << 64) - 1
_INF = float('inf')
_NAN = float('nan')

# The types read as they are; anything else (text, 2.7's long) goes through _convert.
PLAIN = frozenset([int, float, bool, type(None)])


class EvalError(ValueError):
    """An expression failed at run time, or a variable's text is malformed; str() is the
    message, without its place."""


# -- values -------------------------------------------------------------------------

def checked(r):
    """An integer result, or 'bigint out of range' outside int64 (an int on 2.7 too,
    where in-range arithmetic on a long stays a long)."""
    if INT_MIN <= r <= INT_MAX:
        return int(r)
    raise EvalError('bigint out of range')


def rint(x):
    """A double rounded to the nearest int64, halves to even (C's rint, which pgbench
    uses to cast a double to an integer: int(2.5) is 2, int(3.5) is 4)."""
    if not -9.2233720368547758e18 <= x < 9.2233720368547758e18:   # NaN fails too
        raise EvalError('bigint out of range (%s)' % double_text(x))
    f = math.floor(x)
    diff = x - f
    if diff > 0.5 or (diff == 0.5 and f % 2 == 1):
        f += 1
    return int(f)


def as_int(x):
    """A value where an integer is needed (bitwise operators, %, hash, random's
    bounds): a double is rounded; a boolean is an error, as in pgbench."""
    t = type(x)
    if t is int:
        return x
    if t is float:
        return rint(x)
    if t is bool:
        raise EvalError('cannot coerce boolean to int')
    return checked(x)   # 2.7's long


def as_double(x):
    """A value where a double is needed (exp, ln, sqrt, pow, a random parameter)."""
    if type(x) is bool:
        raise EvalError('cannot coerce boolean to double')
    return float(x)


_INT_TEXT = re.compile(r'^\s*[-+]?\d+\Z')
_SIGN_ONLY = re.compile(r'^\s*[-+]?\Z')
_DOUBLE_TEXT = re.compile(r'^\s*[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?'
                          r'|nan|inf|infinity)\Z', re.IGNORECASE)
_HEX_TEXT = re.compile(r'^\s*[-+]?0[xX][0-9a-fA-F]*\.?[0-9a-fA-F]*(?:[pP][-+]?\d+)?\Z')
# pgbench's boolean words: any prefix of true/false/yes/no, and of on/off from two
# letters ("o" alone is neither).
_BOOL_WORDS = (('true', 1, True), ('false', 1, False), ('yes', 1, True), ('no', 1, False),
               ('on', 2, True), ('off', 2, False))


def from_text(text, name):
    """A variable's text as pgbench reads it: null (any case) is NULL; a boolean word
    or prefix is a boolean; an integer is an int (one beyond int64 is an error); a
    number is a double; anything else is 'malformed variable'."""
    lower = text.lower()
    if lower == 'null':
        return None
    for word, least, value in _BOOL_WORDS:
        if len(lower) >= least and word.startswith(lower):
            return value
    if _INT_TEXT.match(text):
        n = int(text)
        if INT_MIN <= n <= INT_MAX:
            return int(n)
        raise EvalError('value "%s" of variable "%s" is out of range for type bigint'
                        % (text, name))
    if _SIGN_ONLY.match(text) and text.strip():
        raise EvalError('invalid input syntax for type bigint: "%s" (variable "%s")'
                        % (text, name))
    if _DOUBLE_TEXT.match(text):
        d = float(text)
        if not (abs(d) == _INF and 'inf' not in lower) and not (
                d == 0.0 and re.search('[1-9]', re.split('[eE]', text)[0])):
            return d
    elif _HEX_TEXT.match(text):   # strtod reads C99 hex floats; 2.7/3.x both do too
        try:
            return float.fromhex(text.strip())
        except (ValueError, OverflowError):
            pass
    raise EvalError('malformed variable "%s" value: "%s"' % (name, text))


def convert(x, name):
    """A variable's value of any type other than int/float/bool/None, as a value."""
    if isinstance(x, numbers.Integral):
        return checked(x)
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, bytes) and not PY2:
        x = x.decode('utf-8')
    elif not isinstance(x, (str, type(u''))):
        x = u'%s' % (x,)
    return from_text(x, name)


def double_text(d):
    """A double as pgbench writes it: 15 significant digits, and NaN, Infinity,
    -Infinity by name (PostgreSQL's own printf does that)."""
    if d != d:
        return 'NaN'
    if d == _INF:
        return 'Infinity'
    if d == -_INF:
        return '-Infinity'
    return '%.15g' % d


def to_text(value):
    """A value as text, as pgbench substitutes it into SQL and \\shell arguments: int
    as digits, double as double_text, true/false, NULL, text as it is."""
    t = type(value)
    if t is int:
        return '%d' % value
    if t is float:
        return double_text(value)
    if t is bool:
        return 'true' if value else 'false'
    if value is None:
        return 'NULL'
    if isinstance(value, (str, type(u''))):
        return value
    if isinstance(value, bytes):              # 3.x bytes (on 2.7 bytes is str)
        return value.decode('utf-8')
    if isinstance(value, numbers.Integral):   # 2.7's long
        return '%d' % value
    if isinstance(value, numbers.Real):
        return double_text(float(value))
    return u'%s' % (value,)


def truthy(value):
    """A value as a condition (\\if, \\elif, CASE WHEN, AND/OR/NOT): a number is true
    when non-zero, NULL is false, text is read first as pgbench reads a variable (a
    ValueError, EvalError, when it is malformed)."""
    t = type(value)
    if t is bool:
        return value
    if value is None:
        return False
    if t is int or t is float:
        return value != 0
    return truthy(convert(value, '?'))


def describe(value):
    """'int 5', 'double 1.5', 'boolean true', 'null': what debug() prints."""
    t = type(value)
    if t is bool:
        return 'boolean ' + to_text(value)
    if value is None:
        return 'null'
    if t is float:
        return 'double ' + double_text(value)
    return 'int ' + to_text(value)


# -- hashes and the permutation ------------------------------------------------------

_MM2_MUL = 0xc6a4a7935bd1e995
_FNV_PRIME = 0x100000001b3
_FNV_OFFSET = 0xcbf29ce484222325


def _signed(h):
    return int(h - (1 << 64) if h >> 63 else h)   # int, not 2.7's long


def hash_murmur2(value, seed):
    """MurmurHash64A of the value's 8 bytes (little-endian), with the seed."""
    k = (value & _M64) * _MM2_MUL & _M64
    k = (k ^ (k >> 47)) * _MM2_MUL & _M64
    h = ((seed & _M64) ^ (8 * _MM2_MUL & _M64)) ^ k
    h = h * _MM2_MUL & _M64
    h = (h ^ (h >> 47)) * _MM2_MUL & _M64
    return _signed(h ^ (h >> 47))


def hash_fnv1a(value, seed):
    """64-bit FNV-1a of the value's 8 bytes (little-endian), the seed mixed into the
    offset basis."""
    h = _FNV_OFFSET ^ (seed & _M64)
    value &= _M64
    for shift in (0, 8, 16, 24, 32, 40, 48, 56):
        h = ((h ^ ((value >> shift) & 0xff)) * _FNV_PRIME) & _M64
    return _signed(h)


def _mix64(z):
    """A 64-bit finaliser (splitmix64's): every input bit moves every output bit."""
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9 & _M64
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb & _M64
    return z ^ (z >> 31)


_round_keys = {}


def _keys(seed):
    """Four round keys of the permutation of a seed (cached: the seed is almost always
    :default_seed, one per run)."""
    keys = _round_keys.get(seed)
    if keys is None:
        if len(_round_keys) > 4096:
            _round_keys.clear()
        z = seed & _M64
        keys = []
        for _ in range(4):
            z = (z + 0x9e3779b97f4a7c15) & _M64
            keys.append(_mix64(z))
        keys = _round_keys[seed] = tuple(keys)
    return keys


def permute(i, size, seed):
    """i's place in a pseudorandom permutation of [0, size) chosen by seed: a 4-round
    Feistel network on the smallest even number of bits that holds size, walked until
    it lands inside [0, size) again (a bijection on a superset stays one on the
    subset; fewer than 4 steps on average). Not pgbench's own permutation: the doc
    promises only a seeded bijection."""
    if size <= 0:
        raise EvalError('permute size must be greater than zero (not %d)' % size)
    x = i % size
    if size == 1:
        return 0
    bits = (size - 1).bit_length()
    half = (bits + 1) // 2
    mask = (1 << half) - 1
    keys = _keys(seed)
    while True:
        left, right = x >> half, x & mask
        for k in keys:
            z = (right ^ k) * 0x9e3779b97f4a7c15 & _M64
            left, right = right, left ^ ((z ^ (z >> 29)) >> 7 & mask)
        x = (left << half) | right
        if x < size:
            return int(x)   # not 2.7's long


# -- random draws --------------------------------------------------------------------

_EXACT = 1 << 53   # random() has 53 bits: int(random() * n) reaches every value below n


def _uniform(rnd, n):
    """An integer in [0, n), n <= 2**63."""
    if n <= _EXACT:
        return int(rnd.random() * n)
    # Past 2**53 one float cannot reach every value: take 106 bits from two.
    return int((int(rnd.random() * _EXACT) * _EXACT + int(rnd.random() * _EXACT)) % n)


def span(lb, ub):
    """ub - lb + 1, checked as pgbench checks a random range."""
    if lb > ub:
        raise EvalError('empty range given to random (%d > %d)' % (lb, ub))
    n = ub - lb + 1
    if n > INT_MAX:
        raise EvalError('random range is too large')
    return n


def draw_exponential(rnd, lb, ub, parameter):
    """The doc's truncated exponential: i in [lb, ub] with probability f(i) - f(i+1),
    f(x) = exp(-p (x - lb) / n) / (1 - exp(-p)): the inverse of that CDF on one draw."""
    n = span(lb, ub)
    if not parameter > 0.0:
        raise EvalError('exponential parameter must be greater than zero (not %s)'
                        % double_text(parameter))
    cut = math.exp(-parameter)
    u = 1.0 - rnd.random()                              # (0, 1]
    r = -math.log(cut + (1.0 - cut) * u) / parameter    # [0, 1)
    return lb + min(int(n * r), n - 1)


def draw_gaussian(rnd, lb, ub, parameter):
    """The doc's truncated normal: a standard normal (Box-Muller on two draws) redrawn
    until it is within [-p, p), then mapped onto [lb, ub] so value i has probability
    f(i + 0.5) - f(i - 0.5) of the doc's f."""
    n = span(lb, ub)
    if not parameter >= 2.0:
        raise EvalError('gaussian parameter must be at least 2.0 (not %s)'
                        % double_text(parameter))
    while True:
        u1 = 1.0 - rnd.random()   # (0, 1]: log(u1) is finite
        u2 = rnd.random()
        z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
        if -parameter <= z < parameter:
            break
    return lb + min(int(n * (z + parameter) / (2.0 * parameter)), n - 1)


def _log1p_over(x):
    """log(1 + x) / x, finite near 0."""
    if abs(x) > 1e-8:
        return math.log1p(x) / x
    return 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))


def _expm1_over(x):
    """(exp(x) - 1) / x, finite near 0."""
    if abs(x) > 1e-8:
        return math.expm1(x) / x
    return 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))


class _Zipf(object):
    """The bounded Zipfian on [1, n] with exponent s (P(k) proportional to k**-s),
    drawn by rejection-inversion (Hoermann and Derflinger, 1996): about one draw per
    value whatever n and s, where pgbench's Devroye rejection needs many near
    s = 1.001. The same distribution, not the same values as pgbench."""

    def __init__(self, n, s):
        self.n = n
        self.one_minus_s = 1.0 - s
        self.s = s
        self.h_x1 = self.big_h(1.5) - 1.0
        self.h_n = self.big_h(n + 0.5)
        self.accept = 2.0 - self.big_h_inv(self.big_h(2.5) - math.exp(-s * math.log(2.0)))

    def big_h(self, x):
        """The integral of x**-s: (x**(1-s) - 1) / (1-s)."""
        lx = math.log(x)
        return _expm1_over(self.one_minus_s * lx) * lx

    def big_h_inv(self, x):
        t = x * self.one_minus_s
        if t <= -1.0:
            return _INF
        return math.exp(_log1p_over(t) * x)

    def draw(self, rnd):
        n, h_n, width = self.n, self.h_n, self.h_x1 - self.h_n
        while True:
            u = h_n + rnd.random() * width
            x = self.big_h_inv(u)
            k = n if x >= n else int(x + 0.5)
            if k < 1:
                k = 1
            if k - x <= self.accept or \
                    u >= self.big_h(k + 0.5) - math.exp(-self.s * math.log(k)):
                return k


_zipfs = {}


def draw_zipfian(rnd, lb, ub, parameter):
    n = span(lb, ub)
    if not 1.001 <= parameter <= 1000.0:
        raise EvalError('zipfian parameter must be in range [1.001, 1000] (not %s)'
                        % double_text(parameter))
    z = _zipfs.get((n, parameter))
    if z is None:
        if len(_zipfs) > 1024:   # a script whose range changes every time: stay bounded
            _zipfs.clear()
        z = _zipfs[(n, parameter)] = _Zipf(n, parameter)
    return lb - 1 + z.draw(rnd)


# -- builders --------------------------------------------------------------------------
# A builder takes (argument closures, where, default_seed closure) and returns f(v, rnd).

def _strict(impl, coerce=None):
    """A builder of a function that is NULL when any argument is NULL; ``coerce``
    applied to each argument first."""
    def build(args, _where, _seed):
        if len(args) == 1:
            (a,) = args

            def one(v, rnd):
                x = a(v, rnd)
                if x is None:
                    return None
                return impl(coerce(x) if coerce else x)
            return one

        def call(v, rnd):
            xs = [f(v, rnd) for f in args]
            if None in xs:
                return None
            return impl(*([coerce(x) for x in xs] if coerce else xs))
        return call
    return build


def _seeded(impl, nargs):
    """A builder of hash*/permute: the seed is the last argument, or :default_seed
    when it is left out."""
    def build(args, _where, seed):
        fs = tuple(args) if len(args) == nargs else tuple(args) + (seed,)

        def call(v, rnd):
            xs = [f(v, rnd) for f in fs]
            if None in xs:
                return None
            return impl(*[as_int(x) for x in xs])
        return call
    return build


def _random_builder(draw):
    """A builder of random_exponential/_gaussian/_zipfian(lb, ub, parameter)."""
    def build(args, _where, _seed):
        flb, fub, fp = args

        def call(v, rnd):
            lb, ub, p = flb(v, rnd), fub(v, rnd), fp(v, rnd)
            if lb is None or ub is None or p is None:
                return None
            return draw(rnd, as_int(lb), as_int(ub), as_double(p))
        return call
    return build


def draw_random(rnd, lb, ub):
    """random(lb, ub) of two values: what _build_random's closure draws (codegen calls it
    off its int fast path)."""
    if type(lb) is not int or type(ub) is not int:
        if lb is None or ub is None:
            return None
        lb, ub = as_int(lb), as_int(ub)
    n = ub - lb + 1
    if 0 < n <= _EXACT:
        return lb + int(rnd.random() * n)
    return lb + _uniform(rnd, span(lb, ub))


def _build_random(args, _where, _seed):
    """random(lb, ub): the hot one (every built-in script draws with it), inlined."""
    flb, fub = args

    def random_(v, rnd):
        lb = flb(v, rnd)
        ub = fub(v, rnd)
        if type(lb) is not int or type(ub) is not int:
            if lb is None or ub is None:
                return None
            lb, ub = as_int(lb), as_int(ub)
        n = ub - lb + 1
        if 0 < n <= _EXACT:
            return lb + int(rnd.random() * n)
        return lb + _uniform(rnd, span(lb, ub))
    return random_


def _build_debug(args, where, _seed):
    """debug(x): x, printed on stderr with its type and the script's line."""
    (a,) = args

    def debug(v, rnd):
        x = a(v, rnd)
        sys.stderr.write('debug(%s): %s\n' % (where, describe(x)))
        return x
    return debug


def _build_pi(_args, _where, _seed):
    return lambda v, rnd: math.pi


def _abs(x):
    if type(x) is bool:
        raise EvalError('cannot coerce boolean to int')
    return abs(x) if type(x) is float else checked(abs(x))


def _extreme(pick):
    """greatest/least: a double when any argument is, else an int."""
    def impl(*xs):
        if bool in [type(x) for x in xs]:
            raise EvalError('cannot coerce boolean to a number')
        if float in [type(x) for x in xs]:
            return float(pick(float(x) for x in xs))
        return checked(pick(xs))
    return impl


def _exp(x):
    try:
        return math.exp(x)
    except OverflowError:
        return _INF


def _ln(x):
    if x > 0.0:
        return math.log(x)
    return -_INF if x == 0.0 else _NAN


def _sqrt(x):
    return math.sqrt(x) if x >= 0.0 else _NAN


def _pow(x, y):
    """C's pow: overflow is infinity, 0 to a negative power is infinity, a negative
    base to a fractional power is NaN (Python raises for all three)."""
    try:
        return math.pow(x, y)
    except OverflowError:
        odd = y == math.floor(y) and math.fmod(y, 2.0) != 0.0
        return -_INF if x < 0 and odd else _INF
    except ValueError:
        if x == 0.0:
            odd = y == math.floor(y) and math.fmod(y, 2.0) != 0.0
            return math.copysign(_INF, x) if odd else _INF
        return _NAN


def c_mod(a, b):
    """C's % on int64: the sign of the dividend; by zero is an error."""
    if b == 0:
        raise EvalError('division by zero')
    r = abs(a) % abs(b)
    return int(-r if a < 0 else r)


def _double(x):
    if type(x) is bool:
        raise EvalError('cannot coerce boolean to double')
    return float(x)


# name -> (least arguments, most arguments or None for any, builder, pure). Pure
# functions of constants are folded when the script is parsed.
FUNCTIONS = {
    'abs': (1, 1, _strict(_abs), True),
    'debug': (1, 1, _build_debug, False),
    'double': (1, 1, _strict(_double), True),
    'exp': (1, 1, _strict(_exp, as_double), True),
    'greatest': (1, None, _strict(_extreme(max)), True),
    'hash': (1, 2, _seeded(hash_murmur2, 2), True),
    'hash_fnv1a': (1, 2, _seeded(hash_fnv1a, 2), True),
    'hash_murmur2': (1, 2, _seeded(hash_murmur2, 2), True),
    'int': (1, 1, _strict(as_int), True),
    'least': (1, None, _strict(_extreme(min)), True),
    'ln': (1, 1, _strict(_ln, as_double), True),
    'mod': (2, 2, _strict(c_mod, as_int), True),
    'permute': (2, 3, _seeded(permute, 3), True),
    'pi': (0, 0, _build_pi, True),
    'pow': (2, 2, _strict(_pow, as_double), True),
    'power': (2, 2, _strict(_pow, as_double), True),
    'random': (2, 2, _build_random, False),
    'random_exponential': (3, 3, _random_builder(draw_exponential), False),
    'random_gaussian': (3, 3, _random_builder(draw_gaussian), False),
    'random_zipfian': (3, 3, _random_builder(draw_zipfian), False),
    'sqrt': (1, 1, _strict(_sqrt, as_double), True),
}
