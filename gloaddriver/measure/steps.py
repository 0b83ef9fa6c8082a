"""Step changes in a series of runs' figures (``gloaddriver trend``), found by a test
simple enough to say in a sentence, as asv and bencher mark theirs:

a step begins at run i when the WINDOW runs from i on and the WINDOW runs before it
do not overlap (each of one group above each of the other) and their means differ by
at least MIN_CHANGE of the earlier mean; of neighbouring such i, the step is the one
where the two means differ most. Noise moves single runs, so a lone outlier is no step
(its group overlaps the other); a step in the last WINDOW - 1 runs is not seen yet.
"""
from __future__ import absolute_import, division, print_function

WINDOW = 3
MIN_CHANGE = 0.05


def _mean(values):
    return sum(values) / float(len(values))


def _candidate(values, i, window, min_change):
    before, after = values[i - window:i], values[i:i + window]
    if any(v is None for v in before + after):
        return None
    apart = min(after) > max(before) or max(after) < min(before)
    mb, ma = _mean(before), _mean(after)
    if not apart or not mb or abs(ma - mb) < min_change * abs(mb):
        return None
    return {'index': i, 'before': mb, 'after': ma, 'change_pct': 100.0 * (ma - mb) / mb}


def find(values, window=WINDOW, min_change=MIN_CHANGE):
    """The steps of a series (None for a run without the figure): a list of {index (the
    first run after the step), before, after (the two windows' means), change_pct}."""
    values = list(values)
    found = [c for c in (_candidate(values, i, window, min_change)
                         for i in range(window, len(values) - window + 1)) if c]
    steps = []
    for c in found:
        last = steps[-1] if steps else None
        if last is not None and c['index'] - last['index'] < window and \
                (last['change_pct'] > 0) == (c['change_pct'] > 0):
            if abs(c['after'] - c['before']) > abs(last['after'] - last['before']):
                steps[-1] = c   # a neighbour of the same step, where it shows more
            continue
        steps.append(c)
    return steps
