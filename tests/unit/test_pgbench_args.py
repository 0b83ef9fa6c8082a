"""``gloaddriver pgbench``'s flags: pgbench 15's command line mapped onto gloaddriver's,
and every flag gloaddriver cannot honour refused in one line (exit 2)."""
from __future__ import absolute_import, division, print_function

import pytest

from gloaddriver import errors
from gloaddriver.config import pgbench_args

NO_ENV = {}


def plan(*argv):
    return pgbench_args.parse(list(argv), environ=NO_ENV)


def flags(*argv):
    """The mapped gloaddriver argv, as {flag: value} (True for a bare flag; a list for
    one given more than once); --seed left out (time-based unless given)."""
    out = {}
    args = plan(*argv).argv
    i = 0
    while i < len(args):
        flag = args[i]
        bare = i + 1 == len(args) or args[i + 1].startswith('--')
        value = True if bare else args[i + 1]
        if flag in out:
            out[flag] = (out[flag] if isinstance(out[flag], list) else [out[flag]]) + [value]
        else:
            out[flag] = value
        i += 1 if bare else 2
    out.pop('--seed', None)
    return out


def test_no_flags_are_pgbenchs_defaults():
    # one client, one thread, 10 transactions per client, tpcb-like, no progress lines
    assert flags() == {'--backend': 'postgres', '--greenlets': '1', '--ops': '10',
                       '--builtin': 'tpcb-like', '--progress': '0'}
    p = plan()
    assert (p.mode, p.vacuum, p.spawn, p.json, p.dsn) == ('run', 'default', False, None, '')
    s = p.settings
    assert (s.clients, s.threads, s.transactions, s.duration, s.detailed) == (1, 1, 10, None,
                                                                            False)
    assert [(x.name, x.label, x.weight) for x in s.scripts] == [
        ('tpcb-like', '<builtin: TPC-B (sort of)>', 1)]


@pytest.mark.parametrize('argv,expected', [
    (['-c', '8', '-j', '2', '-T', '30'], {'--greenlets': '4', '--processes': '2',
                                          '--duration': '30'}),
    (['-c8', '-t', '100'], {'--greenlets': '8', '--ops': '800'}),     # -t is per client
    (['--client=3', '--transactions=7'], {'--greenlets': '3', '--ops': '21'}),
    (['-c', '2', '-j', '5'], {'--greenlets': '1', '--processes': '2'}),  # -j cut to -c
    (['-S'], {'--builtin': 'select-only'}),
    (['-N'], {'--builtin': 'simple-update'}),
    (['-b', 'tpcb@3', '-b', 'sel@1'], {'--builtin': ['tpcb-like@3', 'select-only@1']}),
    (['-f', 'a.sql@2', '-f', 'b.sql'], {'--script': ['a.sql@2', 'b.sql']}),
    (['-M', 'prepared'], {'--protocol': 'prepared'}),
    (['-R', '500'], {'--rate': '500.0', '--arrival': 'poisson'}),
    (['-R', '500', '-L', '5'], {'--rate': '500.0', '--latency-limit': '5.0'}),
    (['-P', '2'], {'--progress': '2'}),
    (['-r'], {'--per-statement': True}),
    (['-C'], {'--connect-per-op': True}),
    (['-l'], {'--tx-log': 'pgbench_log'}),
    (['-l', '--log-prefix', 'x/run', '--sampling-rate', '0.1'],
     {'--tx-log': 'x/run', '--sampling-rate': '0.1'}),
    (['-D', 'a=1', '--define=b=x y'], {'--define': ['a=1', 'b=x y']}),
    (['--max-tries', '3'], {'--max-tries': '3'}),
    (['--max-tries', '0', '-T', '5'], {'--max-tries': '0', '--duration': '5'}),
    (['-s', '5'], {'--scale': '5'}),
    (['-h', 'db1', '-p', '6432', '-U', 'bench', 'shop'],
     {'--dsn': 'host=db1 port=6432 user=bench dbname=shop'}),
    (['shop'], {'--dsn': 'dbname=shop'}),
    (['-h', '/run/my sockets'], {'--dsn': "host='/run/my sockets'"}),
    (['-p', '5433', 'host=a dbname=b'], {'--dsn': 'port=5433 host=a dbname=b'}),
    (['postgresql://u@h/db'], {'--dsn': 'postgresql://u@h/db'}),
    (['-nS', '-c4'], {'--builtin': 'select-only', '--greenlets': '4'}),    # bundled
    (['--sel', '--cl', '2'], {'--builtin': 'select-only', '--greenlets': '2'}),  # prefixes
])
def test_flags_map_onto_gloaddrivers(argv, expected):
    got = flags(*argv)
    for flag, value in expected.items():
        assert got.get(flag) == value, (argv, got)


def test_settings_say_what_the_summary_prints():
    s = plan('-c', '4', '-j', '2', '-T', '9', '-f', 'x/one.sql@3', '-b', 'select-only',
             '-S', '-R', '100', '-L', '2.5', '--failures-detailed').settings
    assert (s.clients, s.threads, s.transactions, s.duration) == (4, 2, None, 9)
    assert (s.detailed, s.rate, s.latency_limit, s.failures_detailed) == (True, True, 2.5, True)
    # files first, then built-ins; a name twice is numbered by position, as gloaddriver does
    assert [(x.name, x.label, x.weight) for x in s.scripts] == [
        ('one', 'x/one.sql', 3), ('select-only_2', '<builtin: select only>', 1),
        ('select-only_3', '<builtin: select only>', 1)]
    assert plan('-P', '1').settings.detailed and not plan('-t', '5').settings.detailed


def test_a_named_script_replaces_the_builtin_default():
    # pgbench runs TPC-B only when no script is named at all.
    s = plan('-f', 'x/hot.sql').settings
    assert [(x.name, x.label, x.weight) for x in s.scripts] == [('hot', 'x/hot.sql', 1)]
    assert '--builtin' not in flags('-f', 'x/hot.sql@1')
    s = plan('-f', 'x/hot.sql', '-b', 'select-only').settings
    assert [x.name for x in s.scripts] == ['hot', 'select-only']
    assert [x.name for x in plan('-t', '5').settings.scripts] == ['tpcb-like']


def test_init_mode():
    p = plan('-i')
    assert (p.mode, p.argv, p.init) == ('init', None, pgbench_args.Init(
        scale=1, steps='dtgvp', fillfactor=100, unlogged=False, quiet=False))
    p = plan('-i', '-s', '3', '-I', 'dt G v', '-F', '90', '--foreign-keys', '--unlogged-tables',
             '-q', '-n', '-h', 'db1', 'shop')
    assert p.init == pgbench_args.Init(scale=3, steps='dtGf', fillfactor=90, unlogged=True,
                                       quiet=True)        # -n: no vacuum step
    assert p.dsn == 'host=db1 dbname=shop'


def test_after_double_dash_come_gloaddrivers_own_flags():
    p = plan('-c', '2', '-S', '--', '--spawn', '--json', 'r.json', '--html', 'r.html')
    assert p.argv[-5:] == ['--spawn', '--json', 'r.json', '--html', 'r.html']
    assert (p.spawn, p.json) == (True, 'r.json')
    assert plan('--', '--dsn=host=x').dsn == 'host=x'     # the vacuum goes where the run goes


def test_seeds():
    seed = lambda *a, **env: int(pgbench_args.parse(list(a), environ=env).argv[
        pgbench_args.parse(list(a), environ=env).argv.index('--seed') + 1])
    assert seed('--random-seed', '42') == 42
    assert seed(PGBENCH_RANDOM_SEED='7') == 7
    assert seed('--random-seed=rand') >= 0
    import time
    assert abs(seed() / 1e6 - time.time()) < 60      # pgbench's default: the time


def test_password_from_gloaddrivers_environment():
    p = pgbench_args.parse(['-i'], environ={'GLOADDRIVER_PASSWORD': 's3cret'})
    assert p.password == 's3cret' and 's3cret' not in p.dsn


@pytest.mark.parametrize('argv,words', [
    (['-c', '3', '-j', '2'], ['-c 3 is not a multiple of -j 2']),
    (['-t', '5', '-T', '5'], ['-t', '-T', 'not both']),
    (['-c', '0'], ['-c/--client', 'at least 1']),
    (['-j', '0'], ['-j/--jobs']),
    (['-P', '0'], ['-P/--progress']),
    (['-c', 'x'], ['-c/--client', "'x'"]),
    (['-M', 'fast'], ['-M/--protocol', 'fast']),
    (['-b', 's'], ['-b s', 'ambiguous']),
    (['-b', 'nosuch'], ['-b nosuch', 'no such']),
    (['-f', 'a.sql@x'], ['-f a.sql@x', 'weight']),
    (['-f', 'a,b.sql'], ['-f a,b.sql', 'comma']),
    (['-b', 'tpcb@0'], ['weights add up to zero']),
    (['-D', 'novalue'], ['-D', 'NAME=VALUE']),
    (['-R', '0'], ['-R/--rate']),
    (['-L', '-1'], ['-L/--latency-limit']),
    (['--max-tries', '0'], ['--max-tries 0', '-T or -L']),
    (['--log-prefix', 'x'], ['--log-prefix', '-l']),
    (['--sampling-rate', '0.5'], ['--sampling-rate', '-l']),
    (['--random-seed', 'soon'], ['--random-seed', 'soon']),
    (['-I', 'dt'], ['-I', 'with -i only']),
    (['-i', '-c', '2', '-T', '3'], ['-c, -T', '-i']),
    (['-i', '-I', 'dtx'], ['-I', '"x"']),
    (['-i', '-F', '5'], ['-F/--fillfactor', '10..100']),
    (['-i', '--', '--spawn'], ['-i', 'after --']),
    (['a', 'b'], ['too many', '"b"']),
    (['--no-such-flag'], ['--no-such-flag']),
    (['-h', 'x', 'postgresql://h/db'], ['inside the URI']),
    # pgbench flags gloaddriver cannot honour: refused by name, never ignored
    (['-i', '--partitions', '4'], ['--partitions']),
    (['-i', '--partition-method', 'hash'], ['--partition-method']),
    (['-i', '--tablespace', 'fast'], ['--tablespace']),
    (['-i', '--index-tablespace', 'fast'], ['--index-tablespace']),
    (['-l', '--aggregate-interval', '10'], ['--aggregate-interval']),
    (['-P', '1', '--progress-timestamp'], ['--progress-timestamp']),
    (['--show-script', 'tpcb-like'], ['--show-script']),
    (['--verbose-errors'], ['--verbose-errors']),
    (['-d'], ['-d']),
])
def test_refusals_are_one_line(argv, words):
    with pytest.raises(errors.ConfigError) as e:
        plan(*argv)
    text = str(e.value)
    assert '\n' not in text, text
    for w in words:
        assert w in text, text


def test_help_version_and_the_list_of_builtins_exit_0(capsys):
    for argv, words in ((['--help'], ['--client NUM', '--greenlets', 'refused']),
                        (['-?'], ['--per-statement']),
                        (['-V'], [pgbench_args.VERSION_LINE]),
                        (['-b', 'list'], ['tpcb-like: <builtin: TPC-B (sort of)>',
                                          'select-only: <builtin: select only>'])):
        with pytest.raises(SystemExit) as e:
            plan(*argv)
        assert e.value.code == 0
        out = capsys.readouterr().out
        for w in words:
            assert w in out, out


def test_every_mapped_argv_is_a_valid_gloaddriver_run(tmpdir):
    """The mapped flags parse as gloaddriver's own (needs the script flags: --builtin,
    --define, --protocol, --scale, --max-tries, --per-statement, --connect-per-op,
    --tx-log, --sampling-rate)."""
    from gloaddriver import config as configuration
    script = tmpdir.join('s.sql')
    script.write('SELECT 1;\n')
    for argv in (['-c', '4', '-j', '2', '-T', '2', '-S', '-P', '1', '-r'],
                 ['-t', '5', '-f', str(script) + '@2', '-b', 'simple', '-M', 'extended',
                  '-D', 'x=1', '-s', '2', '--max-tries', '2', '-C'],
                 ['-R', '100', '-L', '3', '-T', '1', '-l', '--log-prefix',
                  str(tmpdir.join('log')), '--sampling-rate', '0.5']):
        c = configuration.parse(plan(*argv).argv, environ={})
        assert c.backend == 'postgres', argv
