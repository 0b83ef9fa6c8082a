"""``--html FILE`` and the ``--web`` page: one self-contained page, drawn with uPlot.

The page is the same both ways: the view of the result (report.dashboard) as JSON
in a data block, then uPlot and the page's own script, inline. Its
Content-Security-Policy lets nothing load from anywhere: its scripts run by
their hashes, styles are inline, and only the live page may open a connection, to
the server that sent it (its server-sent events). So the file opens offline and
the same in any browser, and the live page talks to nothing but the driver.

uPlot (report/vendor, MIT, version in vendor/README.uPlot) draws the charts:
hover values, drag to zoom, click a legend entry to hide a line. A run with flame
graphs also gets d3 and d3-flame-graph (vendor/README.d3, README.d3-flamegraph),
which draw them; a page without one does not carry them.
"""
from __future__ import absolute_import, division, print_function

import base64
import hashlib
import io
import json
import os

from gloaddriver.report import dashboard

_HERE = os.path.dirname(os.path.abspath(__file__))
_ASSETS = {}


def _asset(name):
    """A file of the package's page, read once."""
    if name not in _ASSETS:
        with io.open(os.path.join(_HERE, name), encoding='utf-8') as f:
            _ASSETS[name] = f.read()
    return _ASSETS[name]


def _sha256(script):
    return "'sha256-%s'" % base64.b64encode(
        hashlib.sha256(script.encode('utf-8')).digest()).decode('ascii')


def _esc(text):
    return (text.replace(u'&', u'&amp;').replace(u'<', u'&lt;').replace(u'>', u'&gt;')
            .replace(u'"', u'&quot;'))


def page(view, live=False, script='dashboard.js', style='dashboard.css'):
    """The page of a view: the --html file, or (``live``) the page --web serves; with
    another ``script`` and ``style`` of this folder, another page drawn with uPlot
    (``gloaddriver trend``'s)."""
    data = json.dumps(view, sort_keys=True, separators=(',', ':'))
    # No "<" at all in the data block: neither "</script" nor "<!--" can end it early.
    data = data.replace('<', '\\u003c')
    if not isinstance(data, type(u'')):
        data = data.decode('utf-8')
    scripts = [_asset('vendor/uPlot.iife.min.js')]
    if dashboard.has_flamegraph(view):
        # d3 (~280 KB) and d3-flame-graph only where a flame graph is drawn: every
        # other page stays as small as it was.
        scripts += [_asset('vendor/d3.min.js'), _asset('vendor/d3-flamegraph.umd.min.js')]
    scripts.append(_asset(script))
    csp = (u"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src %s%s"
           % (u' '.join(_sha256(s) for s in scripts),
              u"; connect-src 'self'" if live else u''))
    return u''.join([
        u'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        u'<meta http-equiv="Content-Security-Policy" content="%s">' % csp,
        u'<meta name="viewport" content="width=device-width, initial-scale=1">',
        u'<title>%s</title>' % _esc(view.get('title') or u'gloaddriver'),
        u'<style>%s\n%s</style></head><body>' % (_asset('vendor/uPlot.min.css'),
                                                 _asset(style)),
        u'<div id="app"><noscript>This page draws its report with its own inline script; '
        u'the data is in the JSON block below.</noscript></div>',
        u'<script type="application/json" id="gl-data">%s</script>' % data,
        u''.join(u'<script>%s</script>' % s for s in scripts),
        u'</body></html>\n'])


def render(result):
    """The page of a finished run (or a merge) as text."""
    return page(dashboard.view(result))


def write(result, path):
    write_view(dashboard.view(result), path)


def write_view(view, path):
    with io.open(path, 'w', encoding='utf-8') as f:
        f.write(page(view))
