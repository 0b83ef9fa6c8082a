"""The tokens of a ``\\set`` or ``\\if`` expression of pgbench's script language.

``tokens(text)`` turns an expression into a list of ``Token(kind, value, pos)``:

* ``int``: an integer literal (its value, unbounded here: the parser decides what fits,
  because ``-9223372036854775808`` is only valid under its minus sign);
* ``double``: ``1.5``, ``1.``, ``.5``, ``1e3``, ``2.5E-3``;
* ``var``: ``:name`` (the value is the name);
* ``func``: a function name, lower-cased (names are case-insensitive);
* a keyword, its kind the upper-cased word: AND OR NOT IS ISNULL NOTNULL NULL TRUE
  FALSE CASE WHEN THEN ELSE END;
* an operator or punctuation, its kind the text: ``+ - * / % | # & ~ << >> = <> != <
  <= > >= ( ) ,``;
* ``eof`` last, at the end of the text.

There are no comments in an expression: pgbench reads ``--2`` as minus minus two, so
``\\set x 1 -- note`` is an error, as it is there.
"""
from __future__ import absolute_import, division, print_function

import re
from collections import namedtuple

Token = namedtuple('Token', 'kind value pos')

KEYWORDS = frozenset(['AND', 'OR', 'NOT', 'IS', 'ISNULL', 'NOTNULL', 'NULL', 'TRUE',
                      'FALSE', 'CASE', 'WHEN', 'THEN', 'ELSE', 'END'])

# Names: letters (any script's, as pgbench takes non-Latin letters), digits and
# underscores, not starting with a digit. Doubles before integers: "1.5" is one token.
_TOKEN = re.compile(r'''
    (?P<space>\s+)
  | (?P<double>(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)
  | (?P<int>\d+)
  | :(?P<var>[^\W\d]\w*)
  | (?P<word>[^\W\d]\w*)
  | (?P<op><>|!=|<=|>=|<<|>>|[-+*/%|#&~=<>(),])
''', re.VERBOSE | re.UNICODE)

# A double literal whose mantissa has a non-zero digit but reads as 0.0 underflowed.
_NONZERO_MANTISSA = re.compile(r'^[0.]*[1-9]')


class ScanError(Exception):
    """A character no token starts with, or a constant out of a double's range;
    ``pos`` is its offset in the text."""

    def __init__(self, message, pos):
        Exception.__init__(self, message)
        self.pos = pos


def tokens(text):
    """The tokens of ``text``, ``eof`` last; raises ScanError."""
    out = []
    pos, end = 0, len(text)
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ScanError('unexpected character "%s"' % text[pos], pos)
        kind = m.lastgroup
        value = m.group(kind)
        if kind == 'double':
            out.append(Token('double', _double(value, pos), pos))
        elif kind == 'int':
            out.append(Token('int', int(value), pos))
        elif kind == 'var':
            out.append(Token('var', value, pos))
        elif kind == 'word':
            upper = value.upper()
            out.append(Token(upper, upper, pos) if upper in KEYWORDS
                       else Token('func', value.lower(), pos))
        elif kind == 'op':
            out.append(Token(value, value, pos))
        pos = m.end()
    out.append(Token('eof', None, end))
    return out


def _double(text, pos):
    """A double literal's value: like pgbench, one too large for a double (1e400) or
    too small (1e-400) is an error, not infinity or zero."""
    value = float(text)
    mantissa = re.split('[eE]', text)[0]
    if value in (float('inf'), float('-inf')) or (
            value == 0.0 and _NONZERO_MANTISSA.match(mantissa)):
        raise ScanError('double constant out of range (%s)' % text, pos)
    return value
