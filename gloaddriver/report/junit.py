"""``--junit FILE``: the --fail-if verdicts as JUnit XML, the format CI systems (Jenkins,
GitLab, GitHub's test reporters) read: one test case per condition and phase it judged,
a failed threshold a ``<failure>``, as k6's JUnit summary writes its thresholds.
"""
from __future__ import absolute_import, division, print_function

import io
import xml.etree.ElementTree as ET

SUITE = 'gloaddriver'


def _value(v):
    if v['value'] is None:
        return 'not measured'
    return '%.6g%s' % (v['value'], ' ' + v['unit'] if v.get('unit') else '')


def document(result):
    """The XML text of a result's thresholds (an empty suite when it has none)."""
    verdicts = result.get('thresholds') or []
    failed = [v for v in verdicts if not v['held']]
    seconds = sum(p.get('seconds') or 0 for p in result.get('phases', []))
    attrs = {'name': SUITE, 'tests': str(len(verdicts)), 'failures': str(len(failed)),
             'errors': '0', 'skipped': '0', 'time': '%.3f' % seconds}
    root = ET.Element('testsuites', dict(attrs))
    suite = ET.SubElement(root, 'testsuite', attrs)
    aborted = result.get('aborted')
    if aborted:
        props = ET.SubElement(suite, 'properties')
        ET.SubElement(props, 'property', {'name': 'aborted', 'value': '%s' % (aborted,)})
    for v in verdicts:
        case = ET.SubElement(suite, 'testcase', {
            'classname': '%s.%s' % (SUITE, v['phase'] or 'run'),
            'name': v['condition'], 'time': '0'})
        if not v['held']:
            why = v.get('why') or ('%s is %s' % (v['phase'], _value(v)))
            failure = ET.SubElement(case, 'failure', {
                'type': 'threshold', 'message': '%s: %s' % (v['condition'], why)})
            failure.text = '%s on %s: %s (limit %.6g%s)' % (
                v['condition'], v['phase'] or 'the run', _value(v),
                v.get('limit') or 0, ' ' + v['unit'] if v.get('unit') else '')
        else:
            out = ET.SubElement(case, 'system-out')
            out.text = '%s: %s' % (v['phase'], _value(v))
    text = ET.tostring(root, encoding='utf-8')
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + text + b'\n'


def write(result, path):
    with io.open(path, 'wb') as f:
        f.write(document(result))
