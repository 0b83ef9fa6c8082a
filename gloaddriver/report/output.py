"""The one place a result becomes its outputs: the table on stdout, the JSON file, the
HTML page. A run, ``--processes`` and ``gloaddriver merge`` all end here."""
from __future__ import absolute_import, division, print_function

import sys

from gloaddriver.report import text


def write(result, json_path=None, html_path=None, out=None, notes=(), fail_if=None,
          csv_prefix=None):
    """Judge the --fail-if thresholds (into the result), print the table (and ``notes``
    below it), then write the files asked for."""
    out = out if out is not None else sys.stdout
    if fail_if:
        from gloaddriver.report import thresholds
        result['thresholds'] = thresholds.evaluate(fail_if, result)
        notes = list(notes) + thresholds.lines(result['thresholds'])
    for line in text.table(result):
        out.write(line + '\n')
    for line in notes:
        out.write(line + '\n')
    out.flush()
    if json_path:
        text.write_json(result, json_path)
    if html_path:
        from gloaddriver.report import html
        html.write(result, html_path)
    if csv_prefix:
        from gloaddriver.report import csvfiles
        csvfiles.write(result, csv_prefix)


def judge(result):
    """(exit code, why) of a result: 0 when every op succeeded; 1 when any failed,
    timed out, the run was aborted or --verify found an acknowledged write lost; 4
    when a --fail-if threshold failed; 130 when interrupted. The one place the exit
    code is decided (the stderr line and the HTML banner both say ``why``)."""
    from gloaddriver import errors
    aborted = result.get('aborted')
    if aborted == errors.INTERRUPTED or (isinstance(aborted, list) and
                                         errors.INTERRUPTED in aborted):
        return errors.EXIT_INTERRUPTED, 'interrupted: the phases so far are reported above'
    lost = (result.get('verify') or {}).get('acknowledged_lost')
    if lost:
        # Before the thresholds: no latency target makes up for data that is gone.
        return errors.EXIT_OPS_FAILED, ('%d acknowledged writes were lost (--verify, see above)'
                                        % lost)
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
                                        'lines above)' % (bad, sum(p['attempted']
                                                                  for p in phases)))
    return errors.EXIT_OK, None


def exit_code(result):
    """The exit code of ``judge``, its reason said on stderr."""
    from gloaddriver import errors
    code, why = judge(result)
    if why:
        errors.say(why)
    return code
