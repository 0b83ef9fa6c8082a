"""deploy/grafana/gloaddriver.json: it parses, and every metric a panel or variable
queries is one gloaddriver's Prometheus endpoint exports (the names rendered here by the
endpoint's own code from an interval with client, error and server figures; the
Prometheus-server test checks them against a real scrape as well)."""
from __future__ import absolute_import, division, print_function

import json
import os
import re

from gloaddriver.report import live, live_send
from tests.unit.test_live import _one_op_figures, parse_prometheus

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = os.path.join(ROOT, 'deploy', 'grafana', 'gloaddriver.json')


def dashboard_metrics():
    """{metric name: [where]} of every query in the dashboard."""
    with open(DASHBOARD) as f:
        dash = json.load(f)
    queries = [(p['title'], t['expr']) for p in dash['panels'] for t in p['targets']]
    queries += [('variable ' + v['name'], v['definition'])
                for v in dash['templating']['list'] if v['type'] == 'query']
    out = {}
    for where, expr in queries:
        names = re.findall(r'\b(gloaddriver_[a-zA-Z0-9_:]+)', expr)
        assert names, (where, expr)   # each query names a metric of ours
        for n in names:
            out.setdefault(n, []).append(where)
    return dash, out


def exported_names():
    from prometheus_client import CollectorRegistry, generate_latest
    fig = _one_op_figures()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(live_send._Collector(
        lambda: live.prometheus_families(fig, 'gloaddriver', (0, 2))))
    return set(name for name, _labels in parse_prometheus(
        generate_latest(registry).decode('utf-8')))


def test_every_panel_queries_a_metric_gloaddriver_exports():
    dash, used = dashboard_metrics()
    assert len(dash['panels']) >= 6
    exported = exported_names()
    unknown = sorted(set(used) - exported)
    assert not unknown, dict((n, used[n]) for n in unknown)
    # The headline figures are all on it.
    for name in ('gloaddriver_client_ops_per_second', 'gloaddriver_client_latency_seconds',
                 'gloaddriver_client_errors_per_second', 'gloaddriver_server_per_second'):
        assert name in used
    for p in dash['panels']:
        assert p['datasource']['type'] == 'prometheus' and p['targets'], p['title']
