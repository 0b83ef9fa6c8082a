"""``--args`` templates: the arguments of a user's request, filled per op.

A template is JSON with placeholders. Outside a JSON string a placeholder is a
value of its own type; inside one it is formatted into the text::

    [{key}, "{value}", {random:1:1000}, "user-{key}", {"n": {random:1:9}}]

=====================  =====================================================
``{key}``              the op's key (an integer), from --distribution/--keys
``{value}``            the value for the key: --value-size characters (text)
``{random:A:B}``       an integer drawn uniformly from [A, B]
``{string:N}``         N random lowercase letters and digits (text)
``{float}``            a float drawn uniformly from [0, 1)
``{worker}``           the worker's number
=====================  =====================================================

Random draws come from the worker's seeded generator, so a run with the same
--seed sends the same arguments on 2.7 and 3.x. The template is compiled once
into a Python function ``fill(key, rnd, worker)``: per op it costs one call
and the work of the placeholders it has, not a JSON parse.
"""
from __future__ import absolute_import, division, print_function

import json
import re
import string

from gloaddriver import errors

NAMES = ('key', 'value', 'random', 'string', 'float', 'worker')
_PLACEHOLDER = re.compile(r'\{([a-z_]+)(?::([^{}"\s]*))?\}')
_ALPHABET = u'' + string.ascii_lowercase + string.digits
# Sentinels that survive json.loads: one for a placeholder that is a whole value,
# one for a placeholder inside a string.
_VALUE, _INLINE = u'\x01', u'\x02'
_SENTINEL = re.compile(u'[\x01\x02](\\d+)[\x01\x02]')


def random_string(rnd, n):
    # rnd.random() draws the same numbers on 2.7 and 3.x; choice() and randint() do not.
    r = rnd.random
    return u''.join([_ALPHABET[int(r() * 36)] for _ in range(n)])


def _expr(name, params, where):
    """The Python expression of one placeholder."""
    if name in ('key', 'value', 'float', 'worker'):
        if params is not None:
            raise errors.ConfigError('%s: {%s} takes no parameters, got {%s:%s}'
                                     % (where, name, name, params))
        return {'key': 'key', 'value': 'values[key % nv]', 'float': 'rnd.random()',
                'worker': 'worker'}[name]
    parts = (params or '').split(':')
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        numbers = None
    if name == 'random':
        if numbers is None or len(numbers) != 2 or numbers[0] > numbers[1]:
            raise errors.ConfigError('%s: {random:%s}: write {random:A:B} with whole numbers '
                                     'A <= B' % (where, params or ''))
        lo, hi = numbers
        return '%d + int(rnd.random() * %d)' % (lo, hi - lo + 1)
    if numbers is None or len(numbers) != 1 or numbers[0] < 1:
        raise errors.ConfigError('%s: {string:%s}: write {string:N} with N a whole number '
                                 'above 0' % (where, params or ''))
    return 'random_string(rnd, %d)' % numbers[0]


def _mark(text, where):
    """The template with each placeholder replaced by a sentinel; their expressions."""
    out, exprs, i, in_string = [], [], 0, False
    while i < len(text):
        ch = text[i]
        if in_string and ch == '\\':
            out.append(text[i:i + 2])
            i += 2
            continue
        if ch == '"':
            in_string = not in_string
        elif ch == '{':
            m = _PLACEHOLDER.match(text, i)
            if m:
                if m.group(1) not in NAMES:
                    raise errors.ConfigError('%s: unknown placeholder {%s}; use %s'
                                             % (where, m.group(1), ', '.join(
                                                 '{%s}' % n for n in ('key', 'value',
                                                                      'random:A:B', 'string:N',
                                                                      'float', 'worker'))))
                exprs.append(_expr(m.group(1), m.group(2), where))
                n = len(exprs) - 1
                out.append(u'%s%d%s' % (_INLINE, n, _INLINE) if in_string else
                           u'"%s%d%s"' % (_VALUE, n, _VALUE))
                i = m.end()
                continue
        out.append(ch)
        i += 1
    return u''.join(out), exprs


def _code(node, exprs):
    """Python source that builds ``node`` with its placeholders filled."""
    if isinstance(node, list):
        return '[%s]' % ', '.join(_code(x, exprs) for x in node)
    if isinstance(node, dict):
        return '{%s}' % ', '.join('%s: %s' % (_code(k, exprs), _code(v, exprs))
                                  for k, v in sorted(node.items()))
    if isinstance(node, type(u'')):
        whole = _SENTINEL.match(node)
        if whole and whole.end() == len(node):
            expr = exprs[int(whole.group(1))]
            # "{value}" and "{string:N}" are text already; "{key}" becomes text.
            if node[0] == _VALUE or expr.startswith(('values[', 'random_string(')):
                return '(%s)' % expr
            return "(u'%%s' %% (%s,))" % expr
        pieces = _SENTINEL.split(node)
        if len(pieces) == 1:
            return repr(node)
        literal = u''.join(p.replace(u'%', u'%%') if i % 2 == 0 else u'%s'
                           for i, p in enumerate(pieces))
        args = [exprs[int(p)] for p in pieces[1::2]]
        return '(%s %% (%s,))' % (repr(literal), ', '.join(args))
    return repr(node)


def _no_constant(name):
    raise ValueError('%s is not a number JSON allows' % name)


def compile_args(text, values, where='--args'):
    """``fill(key, rnd, worker)`` -> the argument list ``text`` describes.

    ``values`` is the workload's value table (value = values[key % len(values)]).
    Raises ConfigError naming the placeholder or the JSON fault."""
    if isinstance(text, bytes):
        text = text.decode('utf-8')
    if _VALUE in text or _INLINE in text:
        raise errors.ConfigError('%s has a control character \\x01 or \\x02; leave them out'
                                 % where)
    marked, exprs = _mark(text, where)
    try:
        # strict=False: the sentinels are control characters inside strings
        tree = json.loads(marked, strict=False, parse_constant=_no_constant)
    except ValueError as e:
        raise errors.ConfigError('%s is not JSON (with its placeholders filled): %s; got %s'
                                 % (where, e, text))
    if not isinstance(tree, list):
        raise errors.ConfigError('%s must be a JSON array (the argument list), got %s'
                                 % (where, text))
    source = 'def fill(key, rnd, worker):\n    return %s\n' % _code(tree, exprs)
    namespace = {'values': values, 'nv': len(values), 'random_string': random_string}
    exec(compile(source, '<%s>' % where, 'exec'), namespace)
    fill = namespace['fill']
    fill.source = source
    return fill
