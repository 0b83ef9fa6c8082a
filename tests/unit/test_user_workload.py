"""--args templates and --workload-file loading and binding, without a server (the
in-memory backend stands in for one)."""
from __future__ import absolute_import, division, print_function

import random

import pytest

from gloaddriver import cli, errors
from gloaddriver import config as configuration
from gloaddriver.workload import template, userfile
from tests import result_schema

VALUES = [u'v%d' % i for i in range(100)]


def fill(text):
    return template.compile_args(text, VALUES)


def test_placeholders_keep_their_type_outside_strings_and_format_inside():
    f = fill('[{key}, "{value}", "k-{key}-100%", {"n": {random:3:3}}, {worker}, 1.5, null]')
    assert f(7, random.Random(1), 2) == [7, u'v7', u'k-7-100%', {u'n': 3}, 2, 1.5, None]


def test_random_draws_are_seeded_in_range_and_the_same_on_every_interpreter():
    f = fill('[{random:1:6}, "{string:8}", {float}]')
    assert f(0, random.Random(42), 0) == f(0, random.Random(42), 0)
    rnd = random.Random(7)
    seen = set(f(0, rnd, 0)[0] for _ in range(600))
    assert seen == set(range(1, 7))
    # rnd.random() is the same Mersenne Twister draw on 2.7 and 3.x
    a, s, x = f(0, random.Random(1), 0)
    assert a == 1 + int(random.Random(1).random() * 6) and len(s) == 8
    assert s == s.lower() and 0 <= x < 1


@pytest.mark.parametrize('text,words', [
    ('[{kee}]', ['unknown placeholder {kee}']),
    ('[{random:2:1}]', ['{random:2:1}', 'A <= B']),
    ('[{random:a:b}]', ['whole numbers']),
    ('[{string:0}]', ['{string:0}']),
    ('[{key:1}]', ['takes no parameters']),
    ('{"a": 1}', ['JSON array']),
    ('[1,', ['is not JSON']),
])
def test_bad_templates_name_the_placeholder(text, words):
    with pytest.raises(errors.ConfigError) as e:
        fill(text)
    for w in words:
        assert w in str(e.value)


def write(tmpdir, text, name='load.py'):
    path = tmpdir.join(name)
    path.write(text)
    return str(path)


def test_a_workload_file_runs_on_the_in_memory_backend(tmpdir):
    path = write(tmpdir, u'''
WEIGHTS = {'put': 1, 'get': 3}
STARTED = []

def setup(db):
    STARTED.append(True)

def op_put(db, key, rnd):
    return db.insert(100000 + key * 1000 + rnd.randint(0, 999))

def op_get(db, key):
    return db.select(key)      # [] for a missing key: a miss
''')
    out = str(tmpdir.join('r.json'))
    rc = cli.main(['--backend', 'memory', '--workload-file', path, '--ops', '400',
                   '--progress', '0', '--json', out])
    assert rc == 0
    with open(out) as f:
        res = result_schema.read(f)
    (phase,) = res['phases']
    assert phase['name'] == 'mix' and sorted(phase['ops']) == ['get', 'put']
    assert phase['ops']['get']['misses'] == phase['ops']['get']['attempted']   # empty dict
    assert phase['ok'] == 400
    assert userfile.load(path).setup.__globals__['STARTED'] == [True]


def test_without_weights_each_op_is_a_phase_in_file_order(tmpdir):
    path = write(tmpdir, u'def op_b(db, key):\n    pass\n\ndef op_a(db, key):\n    pass\n',
                 'order.py')
    c = configuration.parse(['--backend', 'memory', '--workload-file', path], environ={})
    assert [p.name for p in c.load.phases] == ['b', 'a']
    c = configuration.parse(['--backend', 'memory', '--workload-file', path, '--mix', 'a=1,b=1'],
                            environ={})
    assert c.load.phases[0].weights == (('a', 1), ('b', 1))
    with pytest.raises(errors.ConfigError) as e:
        configuration.parse(['--backend', 'memory', '--workload-file', path, '--phases', 'c'],
                            environ={})
    assert 'unknown op' in str(e.value) and path in str(e.value)


def test_none_is_success_and_false_is_a_miss(tmpdir):
    path = write(tmpdir, u'def op_none(db, key):\n    return None\n\n'
                         u'def op_false(db, key):\n    return False\n', 'judged.py')
    out = str(tmpdir.join('r.json'))
    assert cli.main(['--backend', 'memory', '--workload-file', path, '--ops', '50',
                     '--progress', '0', '--json', out]) == 0
    with open(out) as f:
        phases = dict((p['name'], p) for p in result_schema.read(f)['phases'])
    assert (phases['none']['ok'], phases['none']['misses']) == (50, 0)
    assert (phases['false']['ok'], phases['false']['misses']) == (50, 50)


def test_a_failing_setup_stops_the_run_with_one_line(tmpdir, capsys):
    path = write(tmpdir, u'def setup(db):\n    raise RuntimeError("no data")\n\n'
                         u'def op_a(db, key):\n    pass\n', 'setup_fails.py')
    assert cli.main(['--backend', 'memory', '--workload-file', path, '--ops', '5',
                     '--progress', '0']) == 3
    err = capsys.readouterr().err
    assert 'setup(db) failed: RuntimeError: no data' in err and err.count('\n') == 1


def test_a_failing_teardown_is_a_note_and_the_run_is_reported(tmpdir, capsys):
    path = write(tmpdir, u'def teardown(db):\n    raise RuntimeError("cleanup")\n\n'
                         u'def op_a(db, key):\n    pass\n', 'teardown_fails.py')
    out = str(tmpdir.join('r.json'))
    assert cli.main(['--backend', 'memory', '--workload-file', path, '--ops', '5',
                     '--progress', '0', '--json', out]) == 0
    err = capsys.readouterr().err
    assert 'note:' in err and 'teardown(db) failed: RuntimeError: cleanup' in err
    with open(out) as f:
        assert result_schema.read(f)['phases'][0]['ok'] == 5


def test_the_third_parameter_may_have_any_name(tmpdir):
    path = write(tmpdir, u'def op_a(db, key, rng):\n    return [rng.random()]\n', 'rng.py')
    out = str(tmpdir.join('r.json'))
    assert cli.main(['--backend', 'memory', '--workload-file', path, '--ops', '20',
                     '--progress', '0', '--json', out]) == 0
    with open(out) as f:
        assert result_schema.read(f)['phases'][0]['ok'] == 20


def test_loading_a_workload_file_leaves_no_bytecode_beside_it(tmpdir):
    path = write(tmpdir, u'def op_a(db, key):\n    pass\n', 'clean.py')
    userfile.load(path)
    assert sorted(f for f in tmpdir.listdir() if f.basename.startswith('clean')) == \
        [tmpdir.join('clean.py')]


@pytest.mark.parametrize('text', ['[NaN]', '[Infinity]', u'["\x01"]'])
def test_templates_refuse_what_python_could_not_fill(text):
    with pytest.raises(errors.ConfigError):
        fill(text)
