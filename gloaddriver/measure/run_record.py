"""A finished run's result as the rows of the history store (measure.store): one row
for the run, its figures summed over its phases, one per phase, one per tag, one per
outage. The store's columns are filled here and nowhere else."""
from __future__ import absolute_import, division, print_function

import json
import os
import subprocess

# The latency columns of a phase row and the key of the result's latency block each reads.
LATENCY_COLUMNS = (('p50_us', 'p50'), ('p90_us', 'p90'), ('p95_us', 'p95'), ('p99_us', 'p99'),
                   ('p999_us', 'p999'), ('max_us', 'max'), ('mean_us', 'mean'))


def git_commit(folder=None):
    """(commit, dirty) of the git working tree the driver runs in, or (None, None) where
    there is none (or no git): a run is then known by its label and tags alone."""
    folder = folder or os.getcwd()
    try:
        with open(os.devnull, 'w') as null:
            head = subprocess.check_output(['git', 'rev-parse', 'HEAD'], cwd=folder,
                                           stderr=null).decode('ascii').strip()
            changed = subprocess.call(['git', 'diff', '--quiet', 'HEAD', '--'], cwd=folder,
                                      stdout=null, stderr=null)
    except (OSError, subprocess.CalledProcessError, UnicodeDecodeError):
        return None, None
    return head or None, (1 if changed == 1 else 0)


def _dumps(value):
    return json.dumps(value, sort_keys=True, separators=(',', ':'))


def phase_row(seq, p):
    """A phase's row: its counts, rates, percentiles, CPU and syscalls per op, server."""
    lat = p.get('latency_us') or {}
    sysc = p.get('syscalls') or {}
    row = {'seq': seq, 'name': p['name'], 'round': p.get('repeat'), 'step': p.get('step'),
           'attempted': p['attempted'], 'ok': p['ok'], 'failed': p['failed'],
           'timed_out': p['timed_out'], 'misses': p.get('misses'),
           'seconds': p.get('seconds'), 'ops_per_sec': p.get('ops_per_sec'),
           'ok_per_sec': p.get('ok_per_sec'), 'cpu_us_per_op': p.get('cpu_us_per_op'),
           'syscalls_per_op': sysc.get('per_op'), 'network_per_op': sysc.get('network_per_op'),
           'outage_seconds': sum(o.get('duration') or 0 for o in p.get('outages') or ()),
           'latency': _dumps(lat), 'errors': _dumps(p.get('errors') or {}),
           'server': _dumps((p.get('server_metrics') or {}).get('phase'))}
    for column, key in LATENCY_COLUMNS:
        row[column] = lat.get(key)
    return row


def _summary(phases):
    """The run's own figures: all its phases' ops over all their seconds, the highest
    phase p99, syscalls and CPU per op over all ops."""
    attempted = sum(p['attempted'] for p in phases)
    seconds = sum(p.get('seconds') or 0 for p in phases)
    calls = [((p.get('syscalls') or {}).get('per_op'), p['attempted']) for p in phases]
    cpu = [(p.get('cpu_us_per_op'), p['attempted']) for p in phases]
    p99 = [(p.get('latency_us') or {}).get('p99') for p in phases]
    p99 = [v for v in p99 if v is not None]

    def per_op(pairs):
        pairs = [(v, n) for v, n in pairs if v is not None]
        ops = sum(n for _v, n in pairs)
        return sum(v * n for v, n in pairs) / ops if ops else None
    return {'phases': len(phases), 'attempted': attempted,
            'ok': sum(p['ok'] for p in phases),
            'failed': sum(p['failed'] + p['timed_out'] for p in phases),
            'seconds': seconds, 'ops_per_sec': attempted / seconds if seconds else None,
            'p99_us': max(p99) if p99 else None, 'syscalls_per_op': per_op(calls),
            'cpu_us_per_op': per_op(cpu),
            'outage_seconds': sum(o.get('duration') or 0 for p in phases
                                  for o in p.get('outages') or ())}


def rows(result, scenario, label=None, tags=(), exit_code=None, git=(None, None)):
    """(run, phases, tags, outages) rows of a result; ``scenario`` is (key, flags text)."""
    m = result['manifest']
    phases = result['phases']
    run = {'started': m.get('started'), 'started_unix': min(
        [p['started_unix'] for p in phases if p.get('started_unix')] or [None]),
        'scenario': scenario[0], 'scenario_flags': scenario[1], 'label': label,
        'git_commit': git[0], 'git_dirty': git[1], 'backend': m.get('backend'),
        'connector': m.get('connector'), 'server_version': (m.get('server') or {}).get('version'),
        'interpreter': m.get('interpreter'), 'gloaddriver': m.get('gloaddriver'),
        'hostname': m.get('hostname'),
        'aborted': _dumps(result['aborted']) if result.get('aborted') else None,
        'exit_code': exit_code, 'manifest': _dumps(m)}
    run.update(_summary(phases))
    outages = []
    for seq, p in enumerate(phases):
        for i, o in enumerate(p.get('outages') or ()):
            outages.append({'phase_seq': seq, 'seq': i, 'start_s': o.get('start'),
                            'end_s': o.get('end'), 'duration_s': o.get('duration'),
                            'open': 1 if o.get('open') else 0, 'failed': o.get('failed'),
                            'timed_out': o.get('timed_out'), 'detail': _dumps(o)})
    return (run, [phase_row(i, p) for i, p in enumerate(phases)],
            [{'name': k, 'value': v} for k, v in sorted(tags)], outages)
