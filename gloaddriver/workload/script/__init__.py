"""pgbench 15's script language: scanner, parser and evaluator (pure Python; its only
I/O is reading a script file, and debug() writing to stderr).

What a script may hold, as pgbench 15 documents it:

* SQL commands, each ending at a ``;`` outside quotes, comments and parentheses (one
  may span lines; one line may hold several). ``\\;`` joins queries into one compound
  command sent as one query string. ``:name`` in SQL is a variable's text (``::type``
  casts are left alone). Blank lines and ``--`` comments are skipped.
* ``\\set NAME EXPRESSION``. Values are int (int64: leaving its range is an error),
  double, boolean and NULL. An expression has integer and double constants (``5``,
  ``1.5``, ``1e3``, ``.5``), TRUE FALSE NULL, ``:name``, parentheses, ``CASE WHEN c THEN
  v ... [ELSE v] END`` (no ELSE gives NULL), and operators, loosest first: OR, AND, NOT,
  IS [NOT] NULL|TRUE|FALSE / ISNULL / NOTNULL, comparisons (= <> != < <= > >=, which do
  not chain), bitwise | # (xor) & << >> and prefix ~, + -, * / %, unary - and +. Ints
  give ints (/ truncates toward zero, % has the dividend's sign, by zero is an error),
  a double operand gives a double; %, the bitwise operators and integer arguments
  round a double to the nearest int; booleans do no arithmetic. Conditions (\\if, CASE,
  AND, OR, NOT) take a number as true when non-zero and NULL as false; functions and
  most operators give NULL on a NULL argument.
* Functions: abs, debug (prints to stderr, returns its argument), double, exp,
  greatest, least, hash (= hash_murmur2), hash_fnv1a, hash_murmur2, int, ln, mod,
  permute, pi, pow/power, random, random_exponential, random_gaussian, random_zipfian,
  sqrt. hash* and permute take :default_seed when their seed is left out.
* ``\\sleep N [us|ms|s]`` (N an integer or ``:name``), ``\\if``/``\\elif``/``\\else``/
  ``\\endif`` (nested), ``\\gset [prefix]`` and ``\\aset [prefix]`` in place of a ``;``,
  ``\\setshell NAME command args...`` and ``\\shell command args...`` (``:name`` is a
  variable's text, ``::x`` is ``:x``), ``\\startpipeline`` / ``\\syncpipeline`` /
  ``\\endpipeline``. A line ending with a backslash continues a meta-command.

Where pgbench 15 and its reference differ, the reference wins when it accepts more:
``5 or 0`` is TRUE here (pgbench 15 says "cannot coerce int to boolean"). NULL in AND/OR
follows pgbench itself: a NULL first operand gives NULL (``NULL AND FALSE`` is NULL).
Where pgbench lets C wrap an int64 (``1 << 63``, ``abs`` of the smallest), this says
"bigint out of range". A value's text is pgbench's: doubles with 15 significant digits
(NaN, Infinity), true/false, and NULL as ``NULL``. Random draws are the documented
distributions, not pgbench's values: they come from ``rnd.random()`` only, so one seed
draws the same on 2.7 and 3.x; permute is a seeded bijection of its own.

The API::

    s = parse_text(text, path, name, weight)   # Script(name, path, weight, commands)
    s = load('FILE[@W]')                       # named after the file's stem
    s = builtin('tpcb-like@5')                 # or a prefix: 't', 'si', 'se'
    to_text(value)                             # a value as SQL/\\shell text
    truthy(value)                              # a value as a condition

``commands`` is a tuple of namedtuples, each with ``kind``, ``line`` (where it starts)
and ``text`` (its source, whitespace collapsed): ``Sql`` (``queries``: Query tuple,
``gset``/``aset``: None or a prefix), ``Set`` (``name``, ``expr(v, rnd)``), ``Sleep``
(``seconds(v)``), ``Shell`` (kind 'shell' or 'setshell', ``name``, ``argv(v)``),
``Branch`` (``expr``, ``jump``: the index to go on at when the condition is not
truthy), ``Goto`` (``jump``), ``Pipeline`` (kind 'startpipeline', 'syncpipeline' or
'endpipeline'). \\if is a Branch; \\elif a Goto to the chain's end (for the branch above)
then a Branch; \\else a Goto to the end; \\endif nothing. A ``Query`` has ``sql`` (as
written, no ``;``), ``names`` (its variables in order of first use), ``simple(v)`` (the
text with the variables' text in; an unknown ``:name`` stays), ``param_sql`` (``$1``..
in their place) and ``params(v)`` (their text, in ``names`` order).

Errors: a script that cannot be parsed raises ``errors.ConfigError('script PATH, line N:
...')``; a run-time failure ``errors.ScriptError('script PATH, line N: ...')``.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver.workload.script.builtin import builtin
from gloaddriver.workload.script.functions import to_text, truthy
from gloaddriver.workload.script.parse import (
    Branch, Goto, Pipeline, Query, Script, Set, Shell, Sleep, Sql, load, parse_text,
    value_of_text)

__all__ = ['Branch', 'Goto', 'Pipeline', 'Query', 'Script', 'Set', 'Shell', 'Sleep', 'Sql',
           'builtin', 'load', 'parse_text', 'to_text', 'truthy', 'value_of_text']
