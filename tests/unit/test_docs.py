"""Reference that cannot drift: docs/cli.md and docs/result.md are made from the code
(scripts/docsgen.py), and the result's JSON Schema ships and holds for real results."""
from __future__ import absolute_import, division, print_function

import io
import json
import os
import subprocess
import sys

import pytest

from gloaddriver import cli
from tests import result_schema

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
