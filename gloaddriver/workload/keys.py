"""Key generators: sequential, uniform, zipfian, latest; seeded and reproducible.

A generator is a zero-argument callable returning the next integer key in
``[0, n)`` (offset by ``start``). Sequential is shared by all workers of a
phase, so each key is used once in order; the random ones are made one per
worker from ``(seed, phase, worker)`` so a seeded run draws the same keys.
"""
from __future__ import absolute_import, division, print_function

import hashlib
import random

DISTRIBUTIONS = ('sequential', 'uniform', 'zipfian', 'latest')

ZIPF_THETA = 0.99   # YCSB's default skew
_zeta_cache = {}


def sequential(n, start=0):
    """Keys start, start+1, ... wrapping at n; one shared counter."""
    state = [0]

    def next_key():
        i = state[0]
        state[0] = i + 1
        return start + i % n
    next_key.start, next_key.issued = start, state   # read by latest()
    return next_key


def uniform(n, rng, start=0):
    rand = rng.random

    def next_key():
        return start + int(rand() * n)
    return next_key


def _zeta(n, theta):
    key = (n, theta)
    z = _zeta_cache.get(key)
    if z is None:
        z = _zeta_cache[key] = sum(1.0 / (i ** theta) for i in range(1, n + 1))
    return z


def zipfian(n, rng, start=0, theta=ZIPF_THETA):
    """Gray et al.'s zipfian generator (as in YCSB): key 0 is the hottest.

    Unscrambled on purpose: the hot keys are the low ones, which makes a
    hot-spot easy to see in server statistics.
    """
    rand = rng.random
    zetan = _zeta(n, theta)
    alpha = 1.0 / (1.0 - theta)
    zeta2 = 1.0 + 0.5 ** theta
    eta = (1.0 - (2.0 / n) ** (1.0 - theta)) / (1.0 - zeta2 / zetan) if n > 2 else 0.0
    half = 1.0 + 0.5 ** theta

    def next_key():
        u = rand()
        uz = u * zetan
        if uz < 1.0:
            return start
        if uz < half or n < 3:
            return start + (1 if n > 1 else 0)
        return start + min(n - 1, int(n * (eta * u - eta + 1.0) ** alpha))
    return next_key


def latest(n, rng, start=0, inserts=None):
    """YCSB's "latest": zipfian counted back from the newest key, so recent inserts
    are the hottest. The keys are the loaded ``[start, start+n)`` followed by what
    ``inserts`` (the phase's insert generator, if any) has handed out so far; a
    read may reach a key whose insert is still in flight (a miss, counted).
    """
    back = zipfian(n, rng, 0)

    def next_key():
        d = back()
        if inserts is not None:
            count = inserts.issued[0]
            if d < count:
                return inserts.start + count - 1 - d
            d -= count
        return start + n - 1 - d
    return next_key


def make_rng(seed, *parts):
    """A Random seeded identically on 2.7 and 3.x from the seed and a path."""
    # String seeds hash differently on 2.7 and 3.x; an integer seed does not.
    path = '%s/%s' % (seed, '/'.join(str(p) for p in parts))
    return random.Random(int(hashlib.sha1(path.encode('utf-8')).hexdigest()[:16], 16))


def generator(distribution, n, seed, phase, worker, start=0, shared=None, inserts=None):
    """The key generator for one worker; ``shared`` holds the phase's sequential one,
    ``inserts`` its insert generator (for latest)."""
    if distribution == 'sequential':
        return shared if shared is not None else sequential(n, start)
    rng = make_rng(seed, phase, worker)
    if distribution == 'uniform':
        return uniform(n, rng, start)
    if distribution == 'zipfian':
        return zipfian(n, rng, start)
    if distribution == 'latest':
        return latest(n, rng, start, inserts)
    raise ValueError('unknown distribution %r' % (distribution,))
