"""--value-size: one size, a range (memtier's --data-size-range) or a weighted list
(memtier's --data-size-list), and the table of values a run writes from it.

Key k gets ``values[k % len(values)]``, so every backend keeps its one lookup per op and
a key's value (and size) is the same on every run with the same --seed. One size keeps
the classic table of 100 values; a range or a list draws a table of POOL values whose
sizes follow the spec, the sizes shuffled by the seed so they do not come in blocks of
neighbouring keys.
"""
from __future__ import absolute_import, division, print_function

import string
from collections import namedtuple

from gloaddriver.py23 import text_type

POOL = 1000     # values in the table of a range or a list: its sizes' resolution
MAX_SIZE = 64 * 1024 * 1024

# text: as given; choices: ((size, weight), ...) of a list, or None; low, high: the range
# (low == high for one size).
ValueSize = namedtuple('ValueSize', 'text low high choices')


def _size(text, what):
    try:
        n = int(text)
    except ValueError:
        raise ValueError('--value-size: %s must be a whole number of bytes, got %r'
                         % (what, text))
    if not 1 <= n <= MAX_SIZE:
        raise ValueError('--value-size: %s must be 1..%d bytes, got %d' % (what, MAX_SIZE, n))
    return n


def parse(text):
    """'1536', '100-4000' or '100:8,4000:2' (size:weight) -> ValueSize; ValueError says
    what is wrong."""
    text = str(text).strip()
    if ':' in text or ',' in text:
        choices = []
        for part in text.split(','):
            size, sep, weight = part.strip().partition(':')
            if not sep:
                raise ValueError('--value-size: a list takes SIZE:WEIGHT pairs, e.g. '
                                 '100:8,4000:2; got %r' % part)
            w = _size(weight, 'a weight')
            choices.append((_size(size, 'a size'), w))
        return ValueSize(text, min(c[0] for c in choices), max(c[0] for c in choices),
                         tuple(choices))
    low, sep, high = text.partition('-')
    if sep:
        low, high = _size(low, 'the range\'s low end'), _size(high, 'the range\'s high end')
        if low > high:
            raise ValueError('--value-size: the range %s goes down; give LOW-HIGH' % text)
        return ValueSize(text, low, high, None)
    n = _size(text, 'the size')
    return ValueSize(text, n, n, None)


def constant(spec):
    """The one size of ``spec`` (an int or a ValueSize), or None for a range or a list."""
    if isinstance(spec, int):
        return spec
    return spec.low if spec.low == spec.high else None


def draw(spec, rng):
    """The POOL sizes of a range or a list, in a seeded order; only rng.random() is drawn,
    which is the same on 2.7 and 3.x (randint, shuffle and choice are not)."""
    rand = rng.random
    if spec.choices is None:
        span = spec.high - spec.low + 1
        return [spec.low + int(rand() * span) for _ in range(POOL)]
    total = sum(w for _, w in spec.choices)
    sizes, acc = [], 0
    for size, weight in spec.choices:
        # Cumulative rounding: the counts add up to POOL exactly.
        upto = int(round(POOL * (acc + weight) / total))
        sizes.extend([size] * (upto - int(round(POOL * acc / total))))
        acc += weight
    for i in range(len(sizes) - 1, 0, -1):      # Fisher-Yates on random() alone
        j = int(rand() * (i + 1))
        sizes[i], sizes[j] = sizes[j], sizes[i]
    return sizes


def table(spec, rng):
    """The values a run writes: value i is ``string.printable[i % 100]`` repeated to its
    size, always text (unicode on 2.7) so both interpreters send identical bytes."""
    chars = text_type(string.printable)
    one = constant(spec)
    if one is not None:
        return [chars[i % 100] * one for i in range(100)]
    return [chars[i % 100] * n for i, n in enumerate(draw(spec, rng))]

