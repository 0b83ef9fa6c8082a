"""--ha patroni's words before anything starts: the faults of a Patroni cluster as
--fault reads them (switchover, dcs-down/dcs-up, proxy-restart), the settings a preset
and --ha-setting make, and the ones refused (tests/integration/test_patroni.py runs
them on real servers)."""
from __future__ import absolute_import, division, print_function

import pytest

from gloaddriver import converters, errors
from gloaddriver.backends.postgres import patroni


def _pairs(text, replica_set=True):
    return [(f.action, f.target, f.at) for f in converters.faults(text, replica_set)]


def test_the_stacks_faults_are_read_with_their_targets():
    assert _pairs('switchover@3s,dcs-down@5s,dcs-up@9s,proxy-restart@12s') == [
        ('switchover', None, 3.0), ('kill', 'dcs', 5.0), ('start', 'dcs', 9.0),
        ('restart', 'proxy', 12.0)]
    assert _pairs('kill-proxy@1s,start-proxy@2s,stop-dcs@3s:2s') == [
        ('kill', 'proxy', 1.0), ('start', 'proxy', 2.0), ('stop', 'dcs', 3.0)]


@pytest.mark.parametrize('text, says', [
    ('switchover@3s', 'needs a replica set'),
    ('dcs-up@3s', 'the dcs is up then'),
    ('dcs-down@3s,dcs-down@5s', 'the dcs is down then'),
    ('proxy-promote@3s', 'the proxy takes'),
])
def test_a_wrong_sequence_of_them_is_refused(text, says):
    with pytest.raises(ValueError) as e:
        converters.faults(text, replica_set='needs' not in says)
    assert says in str(e.value)


def test_a_preset_then_the_settings_over_it():
    s = patroni.choose_settings('fast', ['ttl=12', 'retry_timeout=4'], 'async')
    assert (s['ttl'], s['loop_wait'], s['retry_timeout'], s['primary_start_timeout']) == (
        12, 1, 4, 10)
    assert (s['synchronous_mode'], s['synchronous_mode_strict']) == (False, False)
    normal = patroni.choose_settings(None, [], 'sync')
    assert (normal['ttl'], normal['loop_wait'], normal['synchronous_mode']) == (30, 10, True)
    strict = patroni.choose_settings('safe', ['synchronous_mode_strict=on'], 'sync')
    assert strict['synchronous_mode'] and strict['synchronous_mode_strict']


@pytest.mark.parametrize('preset, given, replication, says', [
    ('fast', ['ttl=6'], 'async', 'below loop_wait + 2 x retry_timeout'),
    ('fast', ['synchronous_mode=on'], 'async', 'contradicts --replication async'),
    ('fast', ['synchronous_mode_strict=on'], None, 'contradicts'),
    ('fast', ['ttl=ten'], 'async', 'a whole number'),
    ('fast', ['loop_wait=0'], 'async', 'too small'),
    ('fast', ['synchronous_mode=maybe'], 'sync', 'say on or off'),
    ('fast', ['failsafe_mode=on'], 'async', 'NAME one of'),
    ('fastest', [], 'async', '--ha-preset must be one of'),
])
def test_wrong_settings_are_refused_in_one_line(preset, given, replication, says):
    with pytest.raises(errors.ConfigError) as e:
        patroni.choose_settings(preset, given, replication)
    assert says in str(e.value) and '\n' not in str(e.value)


def test_the_dcs_configuration_carries_the_settings_and_the_mode():
    s = patroni.PatroniSet(2, 'remote_apply', patroni.choose_settings('fast', [], 'sync'))
    dcs = s.dcs_config()
    assert (dcs['ttl'], dcs['synchronous_mode'], dcs['failsafe_mode']) == (10, True, False)
    params = dcs['postgresql']['parameters']
    assert params['synchronous_commit'] == 'remote_apply'
    assert params['full_page_writes'] == 'on' and params['wal_log_hints'] == 'on'
    assert dcs['postgresql']['use_pg_rewind']
    assert s.scope != patroni.PatroniSet(2, 'async', patroni.choose_settings(
        'fast', [], 'async')).scope
