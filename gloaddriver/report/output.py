"""The one place a result becomes its outputs: the table on stdout, the JSON file, the
HTML page. A run, ``--processes`` and ``gloaddriver merge`` all end here."""
from __future__ import absolute_import, division, print_function

import sys

from gloaddriver.report import text


def write(result, json_path=None, html_path=None, out=None, notes=(), fail_if=None,
          csv_prefix=None, junit_path=None, baseline=None):
    """Judge the --fail-if thresholds (into the result), print the table (and ``notes``
    below it), then write the files asked for. One file that cannot be written is said
    on stderr and never costs the others (their paths were checked before the run, but a
    disk fills up); the lines said are returned, for ``exit_code``. ``baseline``: what
    --fail-if's relative conditions are judged against (report.baseline)."""
    out = out if out is not None else sys.stdout
    if fail_if:
        from gloaddriver.report import thresholds
        result['thresholds'] = thresholds.evaluate(fail_if, result, baseline)
        notes = list(notes) + thresholds.lines(result['thresholds'])
    for line in text.table(result):
        out.write(line + '\n')
    for line in notes:
        out.write(line + '\n')
    out.flush()
    failed = []
    for flag, path, writer in (('--json', json_path, text.write_json),
                               ('--html', html_path, _html),
                               ('--csv', csv_prefix, _csv),
                               ('--junit', junit_path, _junit)):
        if not path:
            continue
        try:
            writer(result, path)
        except (IOError, OSError) as e:
            failed.append('%s %s was not written: %s' % (
                flag, path, getattr(e, 'strerror', None) or e))
            from gloaddriver import errors
            errors.say(failed[-1])
    return failed


def _html(result, path):
    from gloaddriver.report import html
    html.write(result, path)


def _csv(result, prefix):
    from gloaddriver.report import csvfiles
    csvfiles.write(result, prefix)


def _junit(result, path):
    from gloaddriver.report import junit
    junit.write(result, path)


def exit_code(result, failed_outputs=()):
    """The exit code of ``verdict.judge``, its reason said on stderr; an output that
    was not written makes a run that was otherwise clean exit 1, so a CI job does not
    go on without its report."""
    from gloaddriver import errors
    from gloaddriver.report import verdict
    code, why = verdict.judge(result)
    if why:
        errors.say(why)
    if failed_outputs and code == errors.EXIT_OK:
        return errors.EXIT_OPS_FAILED
    return code
