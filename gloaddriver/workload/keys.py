"""Key generators: sequential, uniform, zipfian, latest, gaussian, hotspot, exponential;
seeded and reproducible.

A generator is a zero-argument callable returning the next integer key in
``[0, n)`` (offset by ``start``). Sequential is shared by all workers of a
phase, so each key is used once in order; the random ones are made one per
worker from ``(seed, phase, worker)`` so a seeded run draws the same keys. They draw
only from ``Random.random()``, the one draw that is the same on 2.7 and 3.x (``randint``,
``gauss`` and ``choice`` are not).

Three take parameters after colons (--distribution NAME:P:Q), each with the default its
model tool uses: ``gaussian:STDDEV`` (memtier's --key-pattern G: mean in the middle of
the range, standard deviation as a fraction of the range, 1/6 by default),
``hotspot:KEYS:OPS`` (YCSB's hotspot: the fraction OPS of ops goes to the lowest
fraction KEYS of the keys, 0.2 and 0.8 by default), ``exponential:PERCENTILE:FRACTION``
(YCSB's exponential: PERCENTILE % of ops go to the newest, highest FRACTION of the keys,
95 and 0.8571 by default).
"""
from __future__ import absolute_import, division, print_function

import hashlib
import math
import random
from itertools import repeat, starmap

try:
    from itertools import imap       # 2.7: map builds a list
except ImportError:
    imap = map

DISTRIBUTIONS = ('sequential', 'uniform', 'zipfian', 'latest', 'gaussian', 'hotspot',
                 'exponential')
# The parameters each takes, with their defaults and the range each must lie in (open
# below, closed above).
PARAMETERS = {
    'gaussian': ((1.0 / 6, 0.0, float('inf')),),
    'hotspot': ((0.2, 0.0, 1.0), (0.8, 0.0, 1.0)),
    'exponential': ((95.0, 0.0, 100.0), (0.8571428571, 0.0, 1.0)),
}

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
    """``start + int(rng.random() * n)`` per call, drawn by a chain of C iterators: no
    Python frame per key, where the hot loop pays one for every other generator."""
    draws = imap(int, imap(float(n).__mul__, starmap(rng.random, repeat(()))))
    if start:
        draws = imap(start.__add__, draws)
    return draws.__next__ if hasattr(draws, '__next__') else draws.next


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


def gaussian(n, rng, start=0, stddev=1.0 / 6):
    """memtier's gaussian key pattern: normal around the middle of the range, a draw
    outside it drawn again (truncated, so the edges get no spike)."""
    rand = rng.random
    mid, sd = (n - 1) / 2.0, max(stddev * n, 1e-9)
    cos, log, sqrt, tau = math.cos, math.log, math.sqrt, 2 * math.pi

    def next_key():
        while True:
            # Box-Muller on two random() draws; 1 - u is never 0.
            z = sqrt(-2.0 * log(1.0 - rand())) * cos(tau * rand())
            k = int(math.floor(mid + z * sd + 0.5))
            if 0 <= k < n:
                return start + k
    return next_key


def hotspot(n, rng, start=0, keys=0.2, ops=0.8):
    """YCSB's hotspot: a fraction ``ops`` of the draws uniform over the lowest ``keys``
    fraction of the keys, the rest uniform over the others."""
    rand = rng.random
    hot = min(max(int(n * keys), 1), n)
    cold = n - hot

    def next_key():
        if rand() < ops or not cold:
            return start + int(rand() * hot)
        return start + hot + int(rand() * cold)
    return next_key


def exponential(n, rng, start=0, percentile=95.0, fraction=0.8571428571):
    """YCSB's exponential: key distances back from the newest (highest) key, exponential
    with ``percentile`` % of them under ``fraction`` of the keys; beyond the range drawn
    again."""
    rand, log = rng.random, math.log
    gamma = -log(1.0 - percentile / 100.0) / (n * fraction)
    last = start + n - 1

    def next_key():
        while True:
            d = int(-log(1.0 - rand()) / gamma)
            if d < n:
                return last - d
    return next_key


def parse_distribution(text):
    """'hotspot:0.1:0.9' -> (name, parameters), each missing parameter its default;
    ValueError says what is wrong."""
    parts = str(text).strip().split(':')
    name = parts[0]
    if name not in DISTRIBUTIONS:
        raise ValueError('--distribution takes one of %s, got %r'
                         % (', '.join(DISTRIBUTIONS), name))
    spec = PARAMETERS.get(name, ())
    if len(parts) - 1 > len(spec):
        raise ValueError('--distribution %s takes %s, got %r' % (
            name, 'no parameters' if not spec else 'at most %d parameter%s' % (
                len(spec), '' if len(spec) == 1 else 's'), text))
    params = []
    for i, (default, low, high) in enumerate(spec):
        if i + 1 >= len(parts):
            params.append(default)
            continue
        try:
            v = float(parts[i + 1])
        except ValueError:
            v = None
        if v is None or not low < v <= high or (name == 'exponential' and i == 0 and v >= high):
            raise ValueError('--distribution %s: parameter %d must be a number above %g and '
                             '%s %g, got %r' % (name, i + 1, low,
                                                'below' if name == 'exponential' and i == 0
                                                else 'at most', high, parts[i + 1]))
        params.append(v)
    return name, tuple(params)


def make_rng(seed, *parts):
    """A Random seeded identically on 2.7 and 3.x from the seed and a path."""
    # String seeds hash differently on 2.7 and 3.x; an integer seed does not.
    path = '%s/%s' % (seed, '/'.join(str(p) for p in parts))
    return random.Random(int(hashlib.sha1(path.encode('utf-8')).hexdigest()[:16], 16))


def generator(distribution, n, seed, phase, worker, start=0, shared=None, inserts=None):
    """The key generator for one worker; ``shared`` holds the phase's sequential one,
    ``inserts`` its insert generator (for latest)."""
    name, params = parse_distribution(distribution)
    if name == 'sequential':
        return shared if shared is not None else sequential(n, start)
    rng = make_rng(seed, phase, worker)
    if name in PARAMETERS:
        made = {'gaussian': gaussian, 'hotspot': hotspot, 'exponential': exponential}[name]
        return made(n, rng, start, *params)
    if name == 'uniform':
        return uniform(n, rng, start)
    if name == 'zipfian':
        return zipfian(n, rng, start)
    return latest(n, rng, start, inserts)
