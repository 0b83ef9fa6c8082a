"""Headless Chromium driven over WebDriver (chromedriver), with the standard library only.

The HTML report is checked where it matters: laid out and painted by a real
browser. The W3C WebDriver protocol is plain JSON over HTTP, so a few calls
through urllib are all a test needs; no Selenium.
"""
from __future__ import absolute_import, division, print_function

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

from gloaddriver.backends.spawn import free_port

try:
    from urllib.request import Request, urlopen
    from urllib.error import HTTPError, URLError
except ImportError:   # Python 2
    from urllib2 import Request, urlopen, HTTPError, URLError

# The key of an element reference in the W3C WebDriver protocol.
ELEMENT = 'element-6066-11e4-a52e-4f735466cecf'
CHROMIUM = '/usr/bin/chromium'
CHROMEDRIVER = '/usr/bin/chromedriver'
# As root Chromium needs --no-sandbox; the network flags keep it from calling
# out at start (this machine's network is closed, and the page needs none).
ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
        '--disable-dev-shm-usage', '--window-size=1400,1000']


def missing():
    """Why no browser can run here, or None."""
    for path, package in ((CHROMIUM, 'chromium'), (CHROMEDRIVER, 'chromium-driver')):
        if not os.access(path, os.X_OK):
            return '%s not found: install the Debian package %s (scripts/test does)' % (
                path, package)
    return None


class Browser(object):
    def __init__(self):
        self.port = free_port()
        self.profile = tempfile.mkdtemp(prefix='gloaddriver-chromium-')
        self.driver = subprocess.Popen([CHROMEDRIVER, '--port=%d' % self.port],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.session = None
        try:
            self._wait_ready()
            caps = {'capabilities': {'alwaysMatch': {
                'browserName': 'chrome',
                'goog:chromeOptions': {'binary': CHROMIUM,
                                       'args': ARGS + ['--user-data-dir=' + self.profile]}}}}
            self.session = self._call('POST', '/session', caps)['sessionId']
        except Exception:
            self.close()
            raise

    def _wait_ready(self):
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if self._call('GET', '/status').get('ready'):
                    return
            except (URLError, socket.error, ValueError):
                pass
            if self.driver.poll() is not None:
                raise RuntimeError('chromedriver exited: %s' % self.driver.stdout.read())
            time.sleep(0.1)
        raise RuntimeError('chromedriver did not start in 30 s')

    def _call(self, method, path, body=None):
        data = json.dumps(body).encode('utf-8') if body is not None else None
        req = Request('http://127.0.0.1:%d%s' % (self.port, path), data=data,
                      headers={'Content-Type': 'application/json'})
        req.get_method = lambda: method
        try:
            reply = urlopen(req, timeout=60).read()
        except HTTPError as e:
            raise RuntimeError('WebDriver %s %s: %s' % (method, path, e.read()[:500]))
        return json.loads(reply.decode('utf-8'))['value']

    def open(self, url):
        self._call('POST', '/session/%s/url' % self.session, {'url': url})

    def run(self, script, *args):
        """The value of a script's return, run in the page."""
        return self._call('POST', '/session/%s/execute/sync' % self.session,
                          {'script': script, 'args': list(args)})

    def elements(self, css):
        """The WebDriver references of the elements a CSS selector finds, in order."""
        found = self._call('POST', '/session/%s/elements' % self.session,
                           {'using': 'css selector', 'value': css})
        return [e[ELEMENT] for e in found]

    def click(self, element):
        """A real click (the browser's own hit test), in the middle of the element."""
        self._call('POST', '/session/%s/element/%s/click' % (self.session, element), {})

    def type(self, element, text):
        self._call('POST', '/session/%s/element/%s/value' % (self.session, element),
                   {'text': text})

    def hover(self, element):
        """Move the mouse onto the middle of the element, as a user would."""
        self._call('POST', '/session/%s/actions' % self.session, {'actions': [{
            'type': 'pointer', 'id': 'mouse', 'parameters': {'pointerType': 'mouse'},
            'actions': [{'type': 'pointerMove', 'duration': 0, 'x': 0, 'y': 0,
                         'origin': {ELEMENT: element}}]}]})

    def resize(self, width, height):
        """The window's size (a screenshot shows only what fits in it)."""
        self._call('POST', '/session/%s/window/rect' % self.session,
                   {'width': width, 'height': height})

    def screenshot(self, path, element=None):
        """A PNG of the window, or of one element of the page."""
        where = '/element/%s' % element if element else ''
        png = base64.b64decode(self._call('GET', '/session/%s%s/screenshot' % (
            self.session, where)))
        with open(path, 'wb') as f:
            f.write(png)
        return png

    def close(self):
        if self.session is not None:
            try:
                self._call('DELETE', '/session/%s' % self.session)
            except Exception:   # the driver may be gone already; it is killed next
                pass
            self.session = None
        if self.driver.poll() is None:
            self.driver.kill()
            self.driver.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
