"""What a run does: phases, op mixes, and the values it writes; keys in ``keys``.

The vocabulary shared by the config, the runner and every backend. Values are
those of the classic 1.5 KB key-value workload, ``string.printable[i % 100] * size``,
always as text (unicode on 2.7) so both interpreters send and store identical bytes;
their sizes may be a range or a weighted list (``sizes``).
"""
from __future__ import absolute_import, division, print_function

from collections import namedtuple

from gloaddriver.workload import keys, sizes

# scan (YCSB E): the rows from a key on, 1 to MAX_SCAN of them; rmw (YCSB F):
# read a row, then write it back changed (two round trips, one latency).
OPS = ('insert', 'select', 'update', 'delete', 'scan', 'rmw')
DEFAULT_PHASES = OPS[:4]
# What --read-from sends to a replica set's replicas (rmw reads what it then writes: the
# leader's).
READ_OPS = ('select', 'scan')
MAX_SCAN = 100

# A phase: a name, and (op, weight) pairs; one pair = a single-op phase.
Phase = namedtuple('Phase', 'name weights')


def values(size, seed=1):
    """The values a run writes, key k gets values[k % len(values)]: for one size (an int,
    or --value-size's ValueSize) the 100 classic ones; for a range or a list of sizes a
    larger table drawn from ``seed`` (workload.sizes)."""
    return sizes.table(size, keys.make_rng(seed, 'values'))


def scan_length(key):
    """1..MAX_SCAN rows, spread evenly over keys (a multiplicative hash of the key, so
    the same key scans the same rows on every run and both interpreters)."""
    return 1 + ((key * 2654435761) >> 11) % MAX_SCAN


def parse_phases(text, allowed=OPS):
    names = [p.strip() for p in text.split(',') if p.strip()]
    if not names:
        raise ValueError('--phases needs at least one of %s' % ','.join(allowed))
    for n in names:
        if n not in allowed:
            raise ValueError('unknown op %r in --phases; use any of %s' % (n, ','.join(allowed)))
    return tuple(Phase(n, ((n, 1),)) for n in names)


def parse_mix(text, allowed=OPS):
    """'select=50,insert=50' -> one Phase named 'mix' with integer weights."""
    weights = []
    for part in text.split(','):
        part = part.strip()
        if not part:
            continue
        name, sep, weight = part.partition('=')
        name = name.strip()
        if not sep or name not in allowed:
            raise ValueError('--mix takes op=weight pairs from %s, e.g. %s; got %r'
                             % (','.join(allowed), ','.join('%s=50' % n for n in allowed[:2]),
                                part))
        try:
            w = int(weight)
        except ValueError:
            raise ValueError('--mix weight for %s must be a whole number, got %r' % (name, weight))
        if w < 0:
            raise ValueError('--mix weight for %s must not be negative' % name)
        if w:
            weights.append((name, w))
    if not weights:
        raise ValueError('--mix needs at least one op with a positive weight')
    return (Phase('mix', tuple(weights)),)


def phases_from(phases, mix, load, allowed=OPS, default=DEFAULT_PHASES):
    """The phases of --phases TEXT or --mix TEXT (None when not given; config refuses
    both at once), with --load."""
    out = parse_mix(mix, allowed) if mix else parse_phases(phases or ','.join(default), allowed)
    if load:
        if not mix:
            raise ValueError('--load goes with --mix (with --phases, start with insert)')
        out = (Phase('load', (('insert', 1),)),) + out
    return out
