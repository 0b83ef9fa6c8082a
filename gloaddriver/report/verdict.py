"""The exit code of a result and why: the one place it is decided, for the stderr
line (report.output) and the page's banner (report.dashboard)."""
from __future__ import absolute_import, division, print_function

from gloaddriver import errors


def judge(result):
    """(exit code, why) of a result: 0 when every op succeeded; 1 when any failed,
    timed out, the run was aborted or --verify found an acknowledged write lost; 4
    when a --fail-if threshold failed or an @abort one stopped the run; 130 when
    interrupted. The one place the exit
    code is decided (the stderr line and the HTML banner both say ``why``)."""
    aborted = result.get('aborted')
    if aborted == errors.INTERRUPTED or (isinstance(aborted, list) and
                                         errors.INTERRUPTED in aborted):
        return errors.EXIT_INTERRUPTED, 'interrupted: the phases so far are reported above'
    lost = (result.get('verify') or {}).get('acknowledged_lost')
    if lost:
        # Before the thresholds: no latency target makes up for data that is gone.
        return errors.EXIT_OPS_FAILED, ('%d acknowledged writes were lost (--verify, see above)'
                                        % lost)
    stopped = [p['threshold_abort'] for p in result['phases'] if p.get('threshold_abort')]
    if stopped:
        # An @abort threshold stopped the run: a threshold verdict, not a failed run.
        return errors.EXIT_THRESHOLD, ('threshold %s broke in phase %s and stopped the run '
                                       '(see above)' % (stopped[0]['condition'],
                                                        stopped[0]['phase']))
    if result.get('find_max') and not aborted:
        # With --find-max the search alone judges the run: the steps past the knee
        # may fail ops, that is what they were for.
        return _find_max(result['find_max'])
    if 'thresholds' in result and not aborted:
        # With --fail-if the thresholds alone judge the run.
        failed = [v for v in result['thresholds'] if not v['held']]
        if failed:
            return errors.EXIT_THRESHOLD, ('%d of %d thresholds failed (see above)'
                                           % (len(failed), len(result['thresholds'])))
        return errors.EXIT_OK, None
    if aborted:
        return errors.EXIT_OPS_FAILED, 'run aborted: %s' % (result['aborted'],)
    phases = result['phases']
    bad = sum(p['failed'] + p['timed_out'] for p in phases)
    if bad:
        return errors.EXIT_OPS_FAILED, ('%d of %d ops failed or timed out (see the error '
                                        'lines above)%s' % (bad, sum(p['attempted']
                                                                    for p in phases),
                                                            _planned(result)))
    return errors.EXIT_OK, None


# Faults that cut the ops in flight: those on a server or a leader that stop it answering.
_CUTTING = ('kill', 'stop', 'restart')


def _planned(result):
    """With --fault, why ops failed in a run that meant them to: the ops in flight at
    a planned kill fail with it, so the run exits 1 however well the failover went;
    --fail-if judges such a run on what matters instead."""
    faults = [f for f in result.get('faults') or () if f.get('action') in _CUTTING]
    if not faults:
        return ''
    return ('; the ops in flight at the planned %s failed with %s, so this run exits 1 '
            'however the failover went: to gate runs with --fault, judge them with '
            '--fail-if (e.g. errors<1%%,p99<50ms), which then alone decides the exit code'
            % (', '.join(sorted(set(_fault_name(f) for f in faults))),
               'it' if len(faults) == 1 else 'them'))


def _fault_name(f):
    return '%s-%s' % (f['action'], f['target']) if f.get('target') else f['action']


def _find_max(fm):
    """--find-max: 0 with a knee (or no break within the step limit), 5 when the client
    could not keep a rate, 4 when no rate tried held the objective."""
    outcome = fm['outcome']
    if outcome == 'client':
        return errors.EXIT_CLIENT_LIMIT, (
            '--find-max: the client could not keep %s ops/s (%s): that is the client\'s '
            'limit, not the server\'s knee; add --processes or --greenlets'
            % (fm['client_limit']['target'], fm['why']))
    if outcome == 'never_held':
        return errors.EXIT_THRESHOLD, ('--find-max: no rate tried held %s (the lowest, %s '
                                       'ops/s, broke it)' % (fm['objective'],
                                                             fm['broke']['target']))
    if outcome == 'no_knee':
        return errors.EXIT_OK, ('--find-max: %s held up to %s ops/s; no step broke it (%s)'
                                % (fm['objective'], fm['held']['target'], fm['why']))
    return errors.EXIT_OK, None
