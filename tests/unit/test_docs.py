"""Docs that cannot drift from the tool: docs/cli.md and docs/result.md are made from the
code, and so are the lists of subcommands and exit codes inside README.md and the docs/
pages (scripts/docsgen.py); every example of output in them has the format of a line
that a real run prints today (tests/docs_examples.py); the pages name what the code has
(live metrics, counted syscalls, benches, pages) and no paragraph breaks off or repeats;
the result's JSON Schema ships, describes every key, and holds for real results."""
from __future__ import absolute_import, division, print_function

import io
import json
import os
import re
import subprocess
import sys

import pytest

from gloaddriver import cli
from tests import docs_examples, result_schema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize('page', ['cli', 'result'])
def test_generated_page_is_current(page):
    # A fresh process: this one has the tests' in-memory backend registered, whose
    # flags would be in the parser.
    made = subprocess.check_output([sys.executable, os.path.join(ROOT, 'scripts', 'docsgen.py'),
                                    '--print', page], cwd=ROOT).decode('utf-8')
    path = os.path.join(ROOT, 'docs', page + '.md')
    with io.open(path, encoding='utf-8') as f:
        assert f.read() == made, 'docs/%s.md is stale: run scripts/docs to regenerate it' % page


def test_the_cli_page_names_every_flag():
    from gloaddriver.config import flags
    with io.open(os.path.join(ROOT, 'docs', 'cli.md'), encoding='utf-8') as f:
        page = f.read()
    parser = flags.build_parser()
    shipped = [a for g in parser._action_groups if g.title != 'memory'   # the tests' own
               for a in g._group_actions]
    options = [o for a in shipped for o in a.option_strings if o.startswith('--')]
    assert len(options) > 60
    missing = [o for o in options if '`%s' % o not in page and ', %s' % o not in page]
    assert not missing


def test_schema_command_prints_the_shipped_schema(capsys):
    assert cli.main(['schema']) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed['required'] == ['manifest', 'phases', 'aborted']
    result_schema.validator()   # a valid draft-07 schema


def test_the_schema_rejects_what_a_result_must_not_be(tmpdir):
    out = str(tmpdir.join('r.json'))
    assert cli.main(['--backend', 'memory', '--progress', '0', '--ops', '50',
                     '--json', out]) == 0
    with io.open(out, encoding='utf-8') as f:
        good = json.load(f)
    assert result_schema.problems(good) == []
    bad = json.loads(json.dumps(good))
    del bad['phases'][0]['ok']
    bad['phases'][1]['attempted'] = '50'
    bad['phases'][2]['latency_us']['p99'] = 'fast'
    del bad['manifest']
    found = result_schema.problems(bad)
    assert len(found) == 4, found
    assert any(p.startswith('phases/0') and "'ok'" in p for p in found)
    # Optional keys of newer files are typed too.
    newer = json.loads(json.dumps(good))
    newer['warnings'] = [{'kind': 'client_cpu', 'phase': 'insert', 'value': 0.97,
                          'limit': 0.9, 'message': 'the driver used 97% of a core'}]
    newer['phases'][0]['latency_us']['p95'] = 120
    assert result_schema.problems(newer) == []
    newer['warnings'][0]['kind'] = 'other'
    assert len(result_schema.problems(newer)) == 1


# -- the lists inside hand-written pages: subcommands and exit codes ---------------------

def _docsgen():
    """scripts/docsgen.py as a module (its lists need no parser, so this process will do)."""
    path = os.path.join(ROOT, 'scripts', 'docsgen.py')
    try:
        import importlib.util
    except ImportError:   # 2.7
        import imp
        return imp.load_source('docsgen_for_tests', path)
    spec = importlib.util.spec_from_file_location('docsgen_for_tests', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _page(name):
    with io.open(os.path.join(ROOT, name), encoding='utf-8') as f:
        return f.read()


def test_the_lists_in_hand_written_pages_are_current():
    docsgen = _docsgen()
    assert docsgen.stale_fragments() == []
    for page, names in (('README.md', ('subcommands', 'exit-codes')),
                        ('docs/report.md', ('exit-codes',))):
        text = _page(page)
        for name in names:
            assert '<!-- generated: %s ' % name in text, (page, name)
    # A list made anew from a changed source is told apart from the page's.
    text = _page('docs/report.md')
    changed = text.replace('| 4 | ', '| 5 | ')
    assert changed != text and docsgen.with_fragments(changed, 'docs/report.md') == text


def test_one_list_of_subcommands_for_dispatch_help_and_docs():
    from gloaddriver.config import flags
    names = [name for name, _text in flags.SUBCOMMANDS]
    assert sorted(cli.DISPATCH) == sorted(names)
    epilog = flags.build_parser().format_help().split('subcommands (')[1]
    for name in names:
        assert '\n  %s ' % name in epilog, name
    cli_md = _page('docs/cli.md')
    for name in names:
        assert '## `gloaddriver %s`' % name in cli_md, name
        assert '* `gloaddriver %s`: ' % name in cli_md and name in _page('README.md')
    tree = [l for l in _page('docs/architecture.md').split('\n') if 'cli.py' in l][0]
    assert all(n in tree for n in names), tree


def test_one_list_of_exit_codes_for_help_and_docs():
    from gloaddriver import errors
    from gloaddriver.config import flags
    constants = set(v for k, v in vars(errors).items() if k.startswith('EXIT_') and
                    isinstance(v, int))
    assert sorted(code for code, _text in errors.EXIT_CODES) == sorted(constants)
    epilog = flags.build_parser().format_help().split('exit codes:')[1]
    for code, text in errors.EXIT_CODES:
        assert '\n  %3d  %s' % (code, text.replace('`', '')[:20]) in epilog, code
        row = '| %d | %s |' % (code, text)
        for page in ('README.md', 'docs/report.md', 'docs/cli.md'):
            assert row in _page(page), (page, code)


def test_a_failed_run_exits_with_the_documented_code(capsys):
    # bad flags: 2; a server that is not there: 3 (errors.EXIT_CODES)
    with pytest.raises(SystemExit) as e:
        cli.main(['--ops', 'many'])
    assert e.value.code == 2
    assert cli.main(['--uri', '127.0.0.1:1', '--ops', '1', '--progress', '0']) == 3
    assert cli.main(['compare', os.path.join(ROOT, 'no-such-result.json')]) == 2


# -- examples of output: the format of real runs ---------------------------------------

@pytest.fixture(scope='module')
def real_runs(tmpdir_factory):
    ref, runs = docs_examples.references(tmpdir_factory.mktemp('docs-runs'))
    for name, (rc, out, err, result) in runs.items():
        # The runs did what they are for (a reference of nothing would pass anything).
        assert rc in (0, 1, 3), (name, rc, err)
        assert (result is None) == (name == 'refused'), (name, err)
    return ref, runs


@pytest.fixture(scope='module')
def reference(real_runs):
    return real_runs[0]


@pytest.mark.deadline(300)
def test_every_example_of_output_has_the_format_of_a_real_run(reference):
    found = []
    wrong = []
    for page, text in docs_examples.pages():
        for n, example, whole in docs_examples.examples(text):
            found.append(page)
            if not reference.has(example, whole):
                wrong.append('%s:%d: %s' % (page, n, example))
    # The pages' examples were read: the demo's table, the progress lines, the compare
    # table, pgbench's summary (the other engineers' pages go through this too).
    for page in ('README.md', 'docs/report.md', 'docs/load.md', 'docs/many-hosts.md',
                 'docs/live-metrics.md', 'docs/pgbench.md', 'docs/outages.md'):
        assert page in found, page
    assert not wrong, ('these lines are not what the tool prints today: rerun '
                       'scripts/docsgen.py --examples (or correct them by hand):\n' +
                       '\n'.join(wrong))


@pytest.mark.deadline(300)
def test_a_changed_format_is_caught(reference):
    text = _page('docs/report.md')
    line = [l for n, l, whole in docs_examples.examples(text) if ' ops/s  p99 ' in l][0]
    assert reference.has(line)
    for changed in (line.replace(' ops/s ', ' op/s '),              # a word
                    line.replace('errors 0', 'errs 0'),
                    line.replace(' | server', ' server'),           # punctuation
                    line + ' | more',                               # something added
                    line.replace('req/s (all request types, all clients)', 'req/s'),
                    line.replace('  errors 0', '')):                # something left out
        assert not reference.has(changed), changed
    assert reference.has(line.replace('88,711', '1,234,567'))   # figures are not format
    assert reference.has(line[:60] + '...')                     # a line cut short
    assert not reference.has('    1.0s insert     88,711 op/s ...')
    assert not reference.has('| server 162,426/s', whole=False)  # the old example
    assert reference.has('| server: no sample (late)', whole=False)


def test_every_block_of_output_is_marked_or_tagged():
    """An untagged block is output or commands; a diagram says ```text. Output blocks
    made by scripts/docsgen.py --examples carry their marker."""
    docsgen = _docsgen()
    for page, text in docs_examples.pages():
        for m in docsgen.OUTPUT.finditer(text):
            assert m.group(2) in docsgen.EXAMPLES, (page, m.group(2))
            assert m.group(3).strip(), '%s: the %s example is empty' % (page, m.group(2))
    marked = set(m.group(2) for _p, t in docs_examples.pages()
                 for m in docsgen.OUTPUT.finditer(t))
    assert marked == set(docsgen.EXAMPLES)


# -- what a page must name ------------------------------------------------------------------

def test_the_live_metrics_page_names_every_figure():
    from gloaddriver.report import live
    fig = {'phase': 'insert', 't': 1.0, 'seconds': 1.0, 'server': {
        'per_sec': {'NAME': 1.0}, 'gauges': {'NAME': 1}, 'late': False, 'restarted': False},
        'driver': {'cpu': 0.5, 'waiting': 0.1, 'busy': 0.6, 'client_bound': 0},
        'blocks': [{'op': 'OP', 'attempted': 1, 'ok': 1, 'errors': 0, 'ops_per_sec': 1.0,
                    'ok_per_sec': 1.0, 'errors_per_sec': 0.0, 'syscalls_per_op': 1.0,
                    'errors_by_kind': {'KIND': 1},
                    'latency_us': dict((key, 1) for key, _q in live._quantiles()),
                    'total': {'attempted': 1, 'ok': 1, 'errors': 0,
                              'errors_by_kind': {'KIND': 1}}}]}
    page = _page('docs/live-metrics.md')
    rows = [[c.strip() for c in l.strip().strip('|').split('|')]
            for l in page.split('\n') if l.startswith('| ') and '`' in l]
    graphite, prometheus = set(), set()
    for row in rows:
        full = None
        for span in re.findall(r'`([^`]+)`', row[1]):
            full = span if '.' in span else (full.rsplit('.', 1)[0] + '.' + span
                                             if full else span)
            graphite.add(full)
        prometheus.update(re.sub(r'\{.*', '', s) for s in re.findall(r'`([^`]+)`', row[2]))
    paths = [path for path, _v, _c in live._metrics(fig)]
    assert len(paths) > 20
    missing = [p for p in paths if p not in graphite]
    assert not missing, 'not in docs/live-metrics.md: %s' % missing
    names = [f.name[len('gloaddriver_'):] for f in live.prometheus_families(fig, 'gloaddriver',
                                                                           None)]
    missing = [n for n in names if n not in prometheus and n + '_total' not in prometheus]
    assert not missing, 'not in docs/live-metrics.md: %s' % missing


def test_the_profiling_page_names_every_counted_syscall():
    from gloaddriver.measure import syscalls
    page = _page('docs/profiling.md')
    counted = re.search(r'`syscalls:sys_enter_<name>` for (\d+) by name: (.*?)\. The JSON',
                        page.replace('\n', ' '), re.S)
    assert counted, 'the list of counted syscalls is gone from docs/profiling.md'
    assert int(counted.group(1)) == len(syscalls.NAMES)
    named = set(re.findall(r'[a-z_]+', counted.group(2)))
    assert set(syscalls.NAMES) <= named, set(syscalls.NAMES) - named


def test_the_index_names_every_bench_and_every_page():
    import yaml
    page = _page('docs/index.md')
    with io.open(os.path.join(ROOT, 'scripts', 'bench'), encoding='utf-8') as f:
        bench = f.read()
    cases = re.search(r'\ncase \$name in\n(.*?)\nesac', bench, re.S).group(1)
    names = set(n for l in cases.split('\n') if ')' in l and 'help' not in l
                for n in l.split(')')[0].strip().split('|') if n != '*')
    assert len(names) > 10
    listed = re.search(r'`scripts/bench NAME` for the benchmarks and checks \((.*?);',
                       page.replace('\n', ' ')).group(1)
    assert sorted(re.findall(r'`([a-z-]+)`', listed)) == sorted(names)
    with io.open(os.path.join(ROOT, 'mkdocs.yml'), encoding='utf-8') as f:
        nav = [list(item.values())[0] for item in yaml.safe_load(f)['nav']]
    assert [p for p in nav if p != 'index.md' and '](%s)' % p not in page] == []


# -- prose that breaks off or repeats itself ------------------------------------------------

def _paragraphs(text):
    """(line number, lines) of a page's blocks outside code, and the kind of each: a
    heading, a table, a list, a comment or prose."""
    lines = text.split('\n')
    out, cur, start, fence = [], [], 0, False
    for i, line in enumerate(lines + ['']):
        if line.startswith('```'):
            fence = not fence
        if fence or line.startswith('```') or not line.strip():
            if cur:
                first = cur[0].strip()
                kind = ('heading' if first.startswith('#') else 'table' if first.startswith('|')
                        else 'comment' if first.startswith('<!--')
                        else 'list' if re.match(r'^(\* |- |\d+\. )', first)
                        else 'code' if cur[0].startswith('    ') else 'prose')
                out.append((start, kind, cur))
                cur = []
            continue
        if not cur:
            start = i + 1
        cur.append(line)
    return out


def test_no_paragraph_breaks_off_or_repeats():
    problems = []
    for page, text in docs_examples.pages():
        blocks = _paragraphs(text)
        seen = {}
        for k, (n, kind, lines) in enumerate(blocks):
            joined = ' '.join(l.strip() for l in lines)
            following = blocks[k + 1][1] if k + 1 < len(blocks) else 'heading'
            # A paragraph followed by another one (or by a heading) ends its sentence;
            # one that leads into a table, a list or a block may end with "and", or ":".
            if kind == 'prose' and following in ('prose', 'heading') and \
                    not re.search(r'[.:?!)*]$', joined):
                problems.append('%s:%d: breaks off: ...%s' % (page, n, joined[-60:]))
            if kind in ('prose', 'list'):
                for sentence in re.split(r'(?<=[.!?])\s+(?=[A-Z`*(\[])', joined):
                    words = sentence.split()
                    key = ' '.join(words)
                    if len(words) >= 10 and key in seen:
                        problems.append('%s:%d: said before (line %d): %s'
                                        % (page, n, seen[key], key[:60]))
                    seen.setdefault(key, n)
        # A list right after a paragraph line is not a list in Markdown: it runs on.
        lines = text.split('\n')
        fence = False
        for i, line in enumerate(lines):
            if line.startswith('```'):
                fence = not fence
            elif not fence and i and re.match(r'^(\* |- |\d+\. )', line) and \
                    lines[i - 1].strip() and \
                    not re.match(r'^(\* |- |\d+\. |  |#|<!--)', lines[i - 1]):
                problems.append('%s:%d: a list with no blank line before it runs on'
                                % (page, i + 1))
    assert not problems, '\n'.join(problems)


# -- the schema describes every key ----------------------------------------------------------

@pytest.mark.deadline(300)
def test_an_undocumented_key_fails_validation(real_runs, tmpdir):
    """Every object of a result refuses a key the schema does not describe, wherever it
    is added; maps keyed by names (error kinds, ops, counters) take new names, with the
    values they describe."""
    _ref, runs = real_runs
    tarantool = runs['tarantool'][3]       # outages, faults, --verify, a timeline
    pgbench = runs['pgbench'][3]           # a phase of scripts, per statement
    out = str(tmpdir.join('mix.json'))
    assert cli.main(['--backend', 'memory', '--progress', '0', '--ops', '300', '--mix',
                     'insert=1,select=1', '--interval', '0.05', '--json', out,
                     '--fail-if', 'p99<1s']) == 0
    with io.open(out, encoding='utf-8') as f:
        mix = json.load(f)
    for result in (tarantool, pgbench, mix):
        assert result_schema.problems(result) == []

    def phase(r, key=None):
        return [p for p in r['phases'] if key is None or p.get(key)][0]
    places = {
        'the result': lambda r: r,
        'the manifest': lambda r: r['manifest'],
        'the server': lambda r: r['manifest']['server'],
        'a planned phase': lambda r: r['manifest']['phases'][0],
        'a phase': lambda r: phase(r),
        'its latencies': lambda r: phase(r)['latency_us'],
        'its syscalls': lambda r: phase(r)['syscalls'],
        'its batching': lambda r: phase(r)['batching'],
        'its client load': lambda r: phase(r)['client'],
        'its keys': lambda r: phase(r)['keys'],
        'a timeline row': lambda r: phase(r)['timeline'][0],
        "a row's latencies": lambda r: phase(r)['timeline'][0]['latency_us'],
        'an outage': lambda r: phase(r, 'outages')['outages'][0],
        'a fault': lambda r: r['faults'][0],
        "a phase's fault": lambda r: phase(r, 'faults')['faults'][0],
        '--verify': lambda r: r['verify'],
        'the server metrics': lambda r: phase(r)['server_metrics'],
        "the server's whole phase": lambda r: phase(r)['server_metrics']['phase'],
        'a server interval': lambda r: phase(r)['server_metrics']['intervals'][0],
        'a server chart': lambda r: phase(r)['server_metrics']['charts'][0],
        'the connection': lambda r: phase(r, 'connection')['connection'],
    }
    for_scripts = {
        'a phase of scripts': lambda r: phase(r)['script'],
        'a statement': lambda r: phase(r)['script']['statements'][0],
        'the pool': lambda r: phase(r)['pool'],
    }
    for_mix = {
        "an op's counts": lambda r: list(phase(r)['ops'].values())[0],
        "a row's op": lambda r: list(phase(r, 'timeline')['timeline'][0]['by_op'].values())[0],
        'a threshold': lambda r: r['thresholds'][0] if 'thresholds' in r else None,
    }
    for result, table in ((tarantool, places), (pgbench, for_scripts), (mix, for_mix)):
        for where, get in table.items():
            bad = json.loads(json.dumps(result))
            node = get(bad)
            if node is None:   # written by the report, not the run: see below
                continue
            node['undocumented'] = 1
            found = result_schema.problems(bad)
            assert len(found) == 1 and "'undocumented'" in found[0] and (
                'was unexpected' in found[0] or 'does not match any of the regexes' in
                found[0]), (where, found)
    # The thresholds are the report's (written with the file): one made the same way.
    from gloaddriver.report import thresholds
    from gloaddriver.config import fail_if
    verdicts = thresholds.evaluate(fail_if.parse('p99<1s'), mix)
    bad = json.loads(json.dumps(dict(mix, thresholds=verdicts)))
    assert result_schema.problems(bad) == []
    bad['thresholds'][0]['undocumented'] = 1
    assert len(result_schema.problems(bad)) == 1
    # Maps keyed by names take new names, and hold their values to a shape.
    named = json.loads(json.dumps(tarantool))
    p = named['phases'][0]
    p['errors']['server:999'] = 3
    p['syscalls']['by_name']['openat'] = 0.5
    p['server_metrics']['phase']['rps']['requests@127.0.0.1:1'] = 10.0
    p['server_metrics']['phase']['lag@127.0.0.1:1'] = 3
    named['manifest']['dependencies']['somepackage'] = '1.0'
    assert result_schema.problems(named) == []
    p['errors']['server:999'] = 'three'
    p['server_metrics']['phase']['lagging@127.0.0.1:1'] = 3
    assert len(result_schema.problems(named)) == 2


def test_a_phase_has_every_key_of_the_counts_block():
    """The phase lists the counts block's keys by reference (no allOf: a strict part of
    one would refuse the other's keys); a key added to counts must be added there too."""
    s = result_schema.validator().schema
    counts = s['definitions']['counts']
    phase = s['definitions']['phase']
    for key in counts['properties']:
        assert phase['properties'][key] == {'$ref': '#/definitions/counts/properties/' + key}
    assert set(counts['required']) <= set(phase['required'])
    # every object of the schema says additionalProperties (false, or the shape of a map)
    loose = []

    def walk(node, path):
        if isinstance(node, dict):
            if node.get('type') == 'object' or 'properties' in node:
                if node.get('additionalProperties', True) is True:
                    loose.append(path)
            for k, v in node.items():
                walk(v, path + '/' + str(k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, '%s/%d' % (path, i))
    walk(s, '#')
    assert loose == []
