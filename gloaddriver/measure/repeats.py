"""``--repeat N`` summarised (memtier's ``--run-count``): of each phase run N times, each
figure's median, best and worst round and their spread, so that one lucky or unlucky
round is seen for what it is. The rounds themselves stay in the result's phases, each
marked with its ``repeat``.

A round of a phase whose ops failed or timed out measured something else (an outage,
duplicate keys): it is named in ``failed_rounds`` and left out of the figures, unless
every round failed (then all are summarised, and all named). Percentiles come only from
the rounds that measured them.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver.measure import stats

# Figures where more is better; for the others (latencies, errors) less is.
_HIGHER_IS_BETTER = ('ops_per_sec', 'ok_per_sec')


def median(values):
    """The middle value of ``values`` (the mean of the two middle ones for an even count)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2.0


def _figure(name, values):
    """median, best, worst and spread (worst - best, as a % of the median) of one figure
    over the rounds that measured it (None when none did)."""
    measured = [v for v in values if v is not None]
    if not measured:
        return None
    hi, lo = max(measured), min(measured)
    best, worst = (hi, lo) if name in _HIGHER_IS_BETTER else (lo, hi)
    mid = median(measured)
    return {'values': values, 'median': round(mid, 1), 'best': best, 'worst': worst,
            'spread_pct': round(100.0 * (hi - lo) / mid, 1) if mid else None}


def figures(block, percentiles):
    """{figure: value} of one round of a phase: the rates, the chosen percentiles, max
    and the errors."""
    lat = block['latency_us']
    out = {'ops_per_sec': block['ops_per_sec'], 'ok_per_sec': block.get('ok_per_sec'),
           'errors': block['failed'] + block['timed_out'], 'max': lat.get('max')}
    for pct in percentiles:
        key = stats.percentile_key(pct)
        out[key] = lat.get(key)
    return out


def summary(phases, rounds, percentiles):
    """The ``repeat`` section: the rounds asked for and run, and per phase name (in the
    order run) each figure over the rounds that ran it."""
    names = []
    by_name = {}
    for n, p in enumerate(phases):
        if p['name'] not in by_name:
            names.append(p['name'])
        by_name.setdefault(p['name'], []).append((p.get('repeat') or n + 1,
                                                  figures(p, percentiles)))
    out = []
    for name in names:
        each = by_name[name]    # (round, figures) of every round that ran it
        failed = [i for i, r in each if r['errors']]
        kept = [r for i, r in each if i not in failed] or [r for _i, r in each]
        figs = {}
        for key in sorted(kept[0]):
            fig = _figure(key, [r[key] for r in kept])
            if fig is not None:
                fig['values'] = [r[key] for _i, r in each]   # every round's, as run
                figs[key] = fig
        out.append({'name': name, 'rounds': len(each), 'figures': figs,
                    'failed_rounds': failed, 'summarised': len(kept)})
    ran = max([p.get('repeat') or 1 for p in phases] or [0])
    return {'rounds': rounds, 'ran': ran, 'phases': out}
