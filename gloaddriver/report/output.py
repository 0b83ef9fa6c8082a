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


def exit_code(result):
    """The exit code of ``verdict.judge``, its reason said on stderr."""
    from gloaddriver import errors
    from gloaddriver.report import verdict
    code, why = verdict.judge(result)
    if why:
        errors.say(why)
    return code
