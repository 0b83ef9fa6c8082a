"""Flag parsing and validation: every bad input is one line and exit code 2."""
from __future__ import absolute_import, division, print_function

import pytest

from gloaddriver import cli, errors
from gloaddriver import config as configuration


def test_defaults_are_the_1_5_kb_four_phase_workload():
    c = configuration.parse([], environ={})
    assert (c.backend, c.opts.connector, c.load.greenlets, c.opts.connections) == (
        'tarantool', 'buffered', 10, 1)
    assert [p.name for p in c.load.phases] == ['insert', 'select', 'update', 'delete']
    assert (c.load.value_size, c.load.ops, c.load.keys, c.opts.addresses) == (
        1536, 100000, 100000, (('127.0.0.1', 3301),))


def test_duration_alone_lifts_the_default_op_limit():
    ops = lambda argv: configuration.parse(argv, environ={}).load.ops
    assert ops(['--duration', '5']) == 0               # the time ends each phase
    assert ops(['--duration', '5', '--ops', '10']) == 10   # whichever comes first
    assert ops([]) == 100000
    assert configuration.parse(['--duration', '5'], environ={}).load.keys == 100000


def test_password_from_environment_and_masked_in_argv():
    c = configuration.parse(['--user', 'u'], environ={configuration.PASSWORD_ENV: 's3cret'})
    assert c.target.password == 's3cret'
    c = configuration.parse(['--password', 'hunter2', '--password=x'], environ={})
    assert 'hunter2' not in ' '.join(c.argv) and 'x' not in c.argv[-1].split('=')[1]


def test_postgres_connectors_share_the_connector_flag_with_tarantool():
    c = configuration.parse(['--backend', 'postgres'], environ={})
    assert (c.opts.connector, c.opts.pool_size) == ('psycopg2', 10)
    c = configuration.parse(['--backend', 'postgres', '--connector', 'pipelined',
                             '--greenlets', '17'], environ={})
    assert (c.opts.connector, c.opts.pool_size) == ('pipelined', 3)   # one per 8 greenlets
    c = configuration.parse(['--connector=sync'], environ={})
    assert (c.backend, c.opts.connector) == ('tarantool', 'sync')


def test_the_pipelined_connector_reads_the_dsn_as_libpq_does():
    pytest.importorskip('psycopg2')
    from gloaddriver.backends.postgres.kv_pipelined import target
    assert target('host=10.0.0.5 port=6432 user=u dbname=d password=p', None, {})[:5] == (
        [('10.0.0.5', 6432)], 'u', 'd', 'p', 'any')
    assert target('postgresql://u@h/db', 'secret', {})[:5] == (
        [('h', 5432)], 'u', 'db', 'secret', 'any')
    assert target('', None, {'PGHOST': 'h', 'PGUSER': 'me', 'PGPASSWORD': 'x'})[:5] == (
        [('h', 5432)], 'me', 'me', 'x', 'any')
    # libpq's multi-host syntax: one port for all, or one per host; the session wanted.
    assert target('host=a,b port=1 user=u dbname=d target_session_attrs=read-write', None,
                  {})[:5:4] == ([('a', 1), ('b', 1)], 'leader')
    assert target('host=a,b port=1,2 user=u dbname=d target_session_attrs=prefer-standby',
                  None, {})[:5:4] == ([('a', 1), ('b', 2)], 'replica')
    # sslmode as libpq: prefer by default (TLS asked for, plain if refused), PGSSLMODE
    modes = [(target(dsn, None, env)[5] or (None,))[0] for dsn, env in [
        ('host=h', {}), ('host=h sslmode=disable', {}), ('host=h', {'PGSSLMODE': 'require'}),
        ('host=h sslmode=allow', {'PGSSLMODE': 'require'})]]
    assert modes == ['prefer', None, 'require', None]
    for dsn, words in [('host=/var/run/postgresql', 'unix socket'), ('dbname=x', 'TCP only'),
                       ('host=a,b port=1,2,3', 'one per host'),
                       ('host=a target_session_attrs=fast', 'none of'), ('host=h sslmode=sure', 'sslmode=sure'),
                       ('host=h sslmode=verify-full sslrootcert=/no/root.crt', '/no/root.crt'),
                       ('host=h nonsense', 'not a valid connection string')]:
        with pytest.raises(errors.ConfigError) as e:
            target(dsn, None, {})
        assert words in str(e.value), (dsn, e.value)


def test_mix_parses_weights():
    c = configuration.parse(['--mix', 'select=90,update=10,delete=0'], environ={})
    (phase,) = c.load.phases
    assert phase.name == 'mix' and phase.weights == (('select', 90), ('update', 10))


@pytest.mark.parametrize('argv', [
    ['--greenlets', '0'], ['--greenlets', 'many'], ['--ops', '-1'], ['--connector', 'x'],
    ['--distribution', 'pareto'], ['--duration', 'soon'], ['--backend', 'redis'],
])
def test_bad_values_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        configuration.parse(argv, environ={})
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and err.startswith('gloaddriver: error:')


@pytest.mark.parametrize('argv,words', [
    (['--uri', 'nohost'], 'HOST:PORT'),
    (['--uri', 'h:99999'], 'HOST:PORT'),
    (['--fault', 'kill@1s'], '--fault needs --spawn'),
    (['--spawn', '--fault', 'start@1s'], 'the server is up then'),
    (['--call', 'box.info', '--verify'], '--call writes what the driver cannot predict'),
    (['--backend', 'postgres', '--workload', 'relational', '--verify'],
     '--workload relational writes'),
    (['--backend', 'postgres', '--workload', 'bulk', '--verify'], 'do not apply to --workload bulk'),
    (['--phases', 'insert,scann'], 'unknown op'),
    (['--mix', 'select'], 'op=weight'),
    (['--mix', 'select=50', '--phases', 'insert'], 'exclude'),
    (['--connector', 'sync', '--connections', '2'], 'buffered'),
    (['--greenlets', '2', '--connections', '3'], 'exceeds'),
    (['--ops', '0'], '--duration'),
    (['--json', '/nonexistent-dir/r.json'], 'does not exist'),
    (['--html', '/'], 'is a directory'),
    (['--interval', '0.5'], '--progress 0'),
    (['--progress', '0', '--interval', '0'], 'above 0'),
    # replica sets
    (['--uri', 'h:1,h:1'], 'names an address twice'),
    (['--uri', 'h:1,'], 'HOST:PORT'),
    (['--replicas', '2'], '--replicas goes with --spawn'),
    (['--spawn', '--replication', 'sync'], '--replication goes with --replicas'),
    (['--spawn', '--replicas', '2', '--replication', 'remote_apply'], "PostgreSQL's"),
    (['--uri', 'h:1,h:2', '--connector', 'sync'], 'takes one address'),
    (['--spawn', '--replicas', '1', '--connector', 'sync'], 'takes one address'),
    (['--read-from', 'replica'], 'needs a replica set'),
    (['--backend', 'postgres', '--dsn', 'host=a', '--read-from', 'any'],
     'needs a replica set'),
    (['--backend', 'postgres', '--spawn', '--replicas', '1', '--read-from', 'any',
      '--workload', 'relational'], 'applies to --workload kv'),
    (['--spawn', '--fault', 'kill-leader@1s'], 'is a member of a replica set'),
    (['--spawn', '--replicas', '2', '--fault', 'start-leader@1s'], 'the leader is up then'),
])
def test_impossible_combinations_are_config_errors(argv, words):
    with pytest.raises(errors.ConfigError) as e:
        configuration.parse(argv, environ={})
    assert words in str(e.value)


def test_several_addresses_and_a_replica_set_parse():
    c = configuration.parse(['--uri', 'a:1, b:2,[::1]:3', '--read-from', 'any'], environ={})
    assert c.opts.addresses == (('a', 1), ('b', 2), ('::1', 3))
    assert c.target.read_from == 'any' and c.target.replicas is None
    c = configuration.parse(['--spawn', '--replicas', '2', '--replication', 'sync', '--fault',
                             'kill@1s,promote@2s'], environ={})
    assert (c.target.replicas, c.target.replication, c.target.read_from) == (2, 'sync',
                                                                             'leader')
    assert [(f.action, f.target) for f in c.target.faults] == [('kill', 'leader'),
                                                               ('promote', None)]


def test_main_returns_2_on_config_error(capsys):
    assert cli.main(['--ops', '0']) == 2
    assert 'Traceback' not in capsys.readouterr().err


def test_interval_follows_progress_unless_progress_is_off():
    assert configuration.parse(['--progress', '0.2'], environ={}).output.interval == 0.2
    assert configuration.parse(['--progress', '0'], environ={}).output.interval == 1.0
    assert configuration.parse(['--progress', '0', '--interval', '0.05'], environ={}).output.interval == 0.05


@pytest.mark.parametrize('argv,words', [
    (['--backend', 'postgres', '--uri=10.0.0.1:9'], '--uri is for --backend tarantool'),
    (['--backend', 'postgres', '--uri', '10.0.0.1:9'], '--uri is for --backend tarantool'),
    (['--backend', 'postgres', '--connector=sync'], '--connector sync is for --backend tarantool'),
    (['--connector', 'pipelined'], '--connector pipelined is for --backend postgres'),
    (['--backend', 'postgres', '--connector', 'pipelined', '--workload', 'bulk'],
     '--connector pipelined runs --workload kv, relational, toolbench, --script and '
     '--workload-file; --workload bulk needs the psycopg2 connector'),
    (['--backend', 'postgres', '--connector', 'pipelined', '--wait-callback', 'cached'],
     'psycopg2 connector'),
    (['--backend', 'postgres', '--workload', 'toolbench', '--decode', 'lazy'],
     '--decode lazy is for --connector pipelined --workload toolbench or relational, or --sql; psycopg2'),
    (['--backend', 'postgres', '--connector', 'pipelined', '--decode', 'lazy'],
     '--decode lazy is for --connector pipelined --workload toolbench or relational, or --sql; this'),
    (['--backend', 'postgres', '--connector', 'pipelined', '--greenlets', '2', '--pool-size',
      '3'], 'no greenlet'),
    (['--backend', 'postgres', '--no-overlap'], '--no-overlap is for --backend tarantool'),
    (['--backend', 'postgres', '--by-name'], '--by-name is for --backend tarantool'),
    (['--dsn=host=x'], '--dsn is for --backend postgres'),
    (['--table', 't'], '--table is for --backend postgres'),
    (['--init'], '--init is for --backend postgres'),
    (['--wait-callback=psycogreen'], '--wait-callback is for --backend postgres'),
    (['--profile-clock=cpu'], '--callgrind'),
    (['--profile-clock', 'wall'], '--callgrind'),
    (['--profiler=yappi'], '--pstats'),
    (['--arrival=poisson'], 'need --rate'),
    (['--backend', 'postgres', '--workload', 'kv', '--rows', '5'], '--workload bulk'),
    (['--backend', 'postgres', '--table', 'a;drop'], 'plain SQL identifier'),
])
def test_flags_of_another_backend_or_mode_are_refused_in_every_spelling(argv, words):
    with pytest.raises(errors.ConfigError) as e:
        configuration.parse(argv, environ={})
    assert words in str(e.value)


def test_a_profile_cannot_smuggle_a_flag_of_the_other_backend(tmpdir, capsys):
    path = str(tmpdir.join('p.ini'))
    with open(path, 'w') as f:
        f.write('[gloaddriver]\ndsn = host=x\n')
    assert cli.main(['--profile', path]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and '--dsn is for --backend postgres' in err
    assert 'Traceback' not in err


def test_backend_options_are_their_own_group():
    t = configuration.parse(['--connector=sync', '--uri=h:1'], environ={})
    assert (t.opts.connector, t.opts.addresses) == ('sync', (('h', 1),))
    p = configuration.parse(['--backend', 'postgres', '--dsn=host=x', '--greenlets', '4'],
                            environ={})
    assert (p.opts.dsn, p.opts.pool_size, p.opts.workload) == ('host=x', 4, 'kv')
    assert not hasattr(p.opts, 'host') and not hasattr(t.opts, 'dsn')


def test_shard_auto_reads_kubernetes_index_or_a_swarm_task_slot():
    def shard(**env):
        return configuration.parse(['--shard', 'auto'], environ=env).load.shard
    assert shard(JOB_COMPLETION_INDEX='2', GLOADDRIVER_SHARDS='4') == (2, 4)
    # A Swarm replicated job: slots from 0, where Docker renders slot 0 as the node id.
    node = 'x3k9q0abcdefghijklmnopqrs'
    assert shard(GLOADDRIVER_TASK_SLOT=node, GLOADDRIVER_NODE_ID=node,
                 GLOADDRIVER_SHARDS='3') == (0, 3)
    assert shard(GLOADDRIVER_TASK_SLOT='2', GLOADDRIVER_NODE_ID=node,
                 GLOADDRIVER_SHARDS='3') == (2, 3)
    # Kubernetes' index wins when both are set; a slot that is neither is one clear line.
    assert shard(JOB_COMPLETION_INDEX='1', GLOADDRIVER_TASK_SLOT='2',
                 GLOADDRIVER_SHARDS='3') == (1, 3)
    for env in ({'GLOADDRIVER_TASK_SLOT': 'other', 'GLOADDRIVER_NODE_ID': node,
                 'GLOADDRIVER_SHARDS': '3'},
                {'GLOADDRIVER_TASK_SLOT': '3', 'GLOADDRIVER_SHARDS': '3'},
                {'GLOADDRIVER_SHARDS': '3'}):
        with pytest.raises(errors.ConfigError) as e:
            configuration.parse(['--shard', 'auto'], environ=env)
        assert '\n' not in str(e.value) and 'shard' in str(e.value)


def test_a_shards_key_space_defaults_to_its_ops_times_the_shards():
    # A shard runs --ops of its own: its part of the key space must hold them.
    keys = lambda argv: configuration.parse(argv, environ={}).load.keys
    assert keys(['--ops', '10000', '--shard', '0/2']) == 20000
    assert keys(['--ops', '10000', '--shard', '1/4', '--keys', '10000']) == 10000   # given
    assert keys(['--ops', '10000']) == 10000
    assert keys(['--duration', '5', '--shard', '0/2']) == 100000   # no op limit: as before


def test_help_lists_the_subcommands(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(['--help'])
    assert e.value.code == 0
    out = capsys.readouterr().out
    from gloaddriver.config.flags import SUBCOMMANDS
    flat = ' '.join(out.split())   # long help lines are folded
    for name, text in SUBCOMMANDS:
        assert '\n  %s ' % name in out and ' '.join(text.split()) in flat


def test_version_goes_to_stdout_on_every_interpreter():
    import subprocess
    import sys
    from gloaddriver import __version__
    from tests.integration.conftest import ROOT
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', '--version'], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    assert p.returncode == 0
    assert out.decode() == 'gloaddriver %s\n' % __version__ and not err


@pytest.mark.parametrize('argv,whole', [
    (['--green', '3'], '--greenlets'),
    (['--greenlet', '10'], '--greenlets'),
    (['--greenlet=10'], '--greenlets'),
    (['--dur', '5'], '--duration'),
    (['--spawn', '--find', 'p99<5ms'], '--find-max'),
])
def test_abbreviated_flags_are_refused_on_every_interpreter(argv, whole, capsys):
    # 2.7's argparse took any unique prefix and has no allow_abbrev to turn that off: a
    # prefix in a CI file would change meaning the day a flag is added beside it.
    with pytest.raises(SystemExit) as e:
        configuration.parse(argv, environ={})
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'is not a flag' in err and whole in err
    # The whole flag, and =, still parse.
    c = configuration.parse(['--greenlets', '3', '--duration=5'], environ={})
    assert (c.load.greenlets, c.load.duration) == (3, 5)


@pytest.mark.parametrize('argv', [['merge', '--js', 'x.json', 'a.json'],
                                  ['compare', '--html', 'x.html', '--flame', 'd', 'a.json'],
                                  ['compat', '--pyth', 'python2.7']])
def test_subcommands_refuse_abbreviated_flags(argv, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    assert 'is not a flag: write it whole' in capsys.readouterr().err
