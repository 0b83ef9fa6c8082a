"""A whole run's result, built in one place: by a run, by ``--processes`` from its
children's results, and by ``gloaddriver merge`` from shards that ran together.

A result is ``{manifest, phases, aborted, warnings}`` and, where they apply,
``verify``, ``faults``, ``live``, ``repeat``; a merge adds ``parts`` (each part's manifest) and,
under --processes, ``processes`` (each child's whole result). Phases are
measure.phase_result.PhaseResult blocks; a merge joins the phases of the same name.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver.measure import client_bound, stats
from gloaddriver.measure.phase_result import PhaseResult


def build(manifest, phases, aborted=None, verify=None, faults=None, live=None, repeat=1,
          find_max=None):
    """The result of one run (or of a merge, whose parts' figures are already in
    ``phases``): the run's warnings are its phases' warnings, in phase order; with
    --repeat N (``repeat``), the rounds summarised; with --find-max, the search
    (``find_max``, run/find_max.py's)."""
    phases = list(phases)
    result = {'manifest': manifest, 'phases': phases, 'aborted': aborted,
              'warnings': client_bound.collect(phases)}
    if repeat > 1:
        from gloaddriver.measure import repeats
        result['repeat'] = repeats.summary(phases, repeat, manifest.get('percentiles') or
                                           stats.DEFAULT_PERCENTILES)
    for key, value in (('verify', verify), ('faults', faults), ('live', live),
                       ('find_max', find_max)):
        if value is not None:
            result[key] = value
    return result


def merge(results, aborted=None, manifest=None, faults=None, processes=None, find_max=None):
    """One result from results of parts that ran together. ``aborted`` (the whole
    run's reason) stands for the parts' list; ``manifest`` has fields over the first
    part's; ``processes`` keeps the parts' whole results; ``find_max``, the search of
    the parts' --find-max steps (a step of each part, merged, is a step)."""
    by_name, order = {}, []
    for r in results:
        for p in r['phases']:
            key = (p['name'], p.get('step'))
            if key not in by_name:
                by_name[key] = []
                order.append(key)
            by_name[key].append(p)
    if aborted is None:
        aborted = [r.get('aborted') for r in results if r.get('aborted')] or None
    verified = [r['verify'] for r in results if r.get('verify')]
    out = build(dict(results[0]['manifest'], merged_from=len(results),
                     shards=[r['manifest'].get('shard') for r in results], **(manifest or {})),
                [_step(PhaseResult.merged(key[0], by_name[key]), key[1]) for key in order],
                aborted, _merge_verify(verified) if verified else None, faults,
                find_max=find_max)
    out['parts'] = [r['manifest'] for r in results]
    if processes is not None:
        out['processes'] = processes
    return out


def _step(phase, step):
    if step is not None:
        phase['step'] = step
    return phase


def _merge_verify(parts):
    """Each part read back its own keys: the counts add up."""
    out = {'examples': {}, 'notes': ['each process read back the keys it wrote']}
    for v in parts:
        for k, n in v.items():
            if isinstance(n, (int, float)) and not isinstance(n, bool):
                out[k] = out.get(k, 0) + n
        for k, keys in v.get('examples', {}).items():
            out['examples'][k] = (out['examples'].get(k, []) + keys)[:5]
    errs = [v['error'] for v in parts if v.get('error')]
    if errs:
        out['error'] = errs[0]
    return out
