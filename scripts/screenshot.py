"""docs/img/flamegraph.png: the report page's flame graphs, as headless Chromium draws
them, from a real run (scripts/screenshot installs what it needs, then runs this).

A private Tarantool, 100 greenlets, an insert and a select phase of a few seconds
each, sampled with --flamegraph (py-spy) and, where perf can record, with
--server-flamegraph; then the select phase's graphs, client and server side by
side, photographed as one element of the page. The search box is given "Hub" so the
picture shows a search's highlight too.
"""
from __future__ import absolute_import, division, print_function

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.integration import browser  # noqa: E402  (the checkout's, beside the tests)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=os.path.join(ROOT, 'docs', 'img', 'flamegraph.png'))
    ap.add_argument('--seconds', type=float, default=3.0, help='each phase (default 3)')
    ap.add_argument('--search', default='Hub', help='typed into the client graph\'s search box')
    ap.add_argument('--no-server', action='store_true', help='no --server-flamegraph')
    args = ap.parse_args()
    why = browser.missing()
    if why:
        sys.exit('screenshot: ' + why)
    work = tempfile.mkdtemp(prefix='gloaddriver-screenshot-')
    try:
        html = os.path.join(work, 'report.html')
        argv = [sys.executable, '-m', 'gloaddriver', '--spawn', '--greenlets', '100',
                '--ops', '0', '--duration', str(args.seconds), '--phases', 'insert,select',
                '--progress', '0', '--flamegraph', work, '--html', html]
        if not args.no_server:
            argv += ['--server-flamegraph', work]
        print('screenshot: ' + ' '.join(argv[1:]))
        subprocess.check_call(argv, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
        b = browser.Browser()
        try:
            b.open('file://' + html)
            flames = 'section[data-phase="select"] .flames'
            deadline = time.time() + 20
            while not b.run("return document.querySelectorAll(arguments[0] + ' g.frame').length"
                            " > 3", flames) and time.time() < deadline:
                time.sleep(0.2)
            if args.search:
                b.type(b.elements(flames + ' figure[data-flame="client"] input')[0], args.search)
            time.sleep(2)   # d3-flame-graph's boxes grow to their widths, then stay
            (box,) = b.elements(flames)
            # tall enough for the whole of both graphs: a screenshot ends at the window
            b.resize(1400, int(b.run('return document.documentElement.scrollHeight')) + 100)
            time.sleep(0.5)
            b.screenshot(args.out, box)
        finally:
            b.close()
        print('screenshot: wrote %s' % args.out)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
