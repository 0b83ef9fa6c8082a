"""--value-size's range and weighted list and --distribution's hotspot, read back from a
real Tarantool: what the server stored, not what the driver says it sent."""
from __future__ import absolute_import, division, print_function

import string

from tests.integration.conftest import assert_accounted, connect, create_space, run_cli

SIZES = u"""local n = {} for _, t in box.space[...]:pairs() do
            n[#n + 1] = #t[2] end return n"""
DIGEST = u"""local parts = {} for _, t in box.space[...]:pairs() do parts[#parts + 1] = t[2] end
             return require('digest').sha1_hex(table.concat(parts))"""


def lua(server, code, *args):
    conn = connect(server)
    try:
        return conn.eval(code, *args)[0]
    finally:
        conn.close()


def test_a_weighted_list_of_sizes_is_what_the_server_stores(tarantool, space):
    rc, _out, err, res = run_cli(['--space', space, '--phases', 'insert,select', '--ops', '2000',
                                  '--value-size', '100:8,4000:2'], tarantool)
    assert rc == 0, err
    assert_accounted(res)
    assert res['manifest']['value_size'] == '100:8,4000:2'
    assert res['phases'][1]['misses'] == 0
    stored = list(lua(tarantool, SIZES, space))
    # 2000 keys are two turns of the 1000-value table: exactly its 800 and 200, twice
    assert len(stored) == 2000
    assert (stored.count(100), stored.count(4000)) == (1600, 400)


def test_a_range_of_sizes_is_drawn_by_the_seed(tarantool):
    spaces = [create_space(tarantool) for _ in range(3)]
    for space, seed in zip(spaces, ('3', '3', '4')):
        rc, _out, err, _res = run_cli(['--space', space, '--phases', 'insert', '--ops', '500',
                                       '--value-size', '10-300', '--seed', seed], tarantool)
        assert rc == 0, err
    stored = list(lua(tarantool, SIZES, spaces[0]))
    assert 10 <= min(stored) and max(stored) <= 300 and len(set(stored)) > 100
    digests = [lua(tarantool, DIGEST, s) for s in spaces]
    assert digests[0] == digests[1] != digests[2]


def test_hotspot_updates_land_on_the_hot_keys(tarantool, space):
    # 2000 keys, then 2000 updates of which 90 % go to the lowest 10 % of the keys: nearly
    # every hot key is updated, few cold ones are.
    rc, _out, err, res = run_cli(['--space', space, '--phases', 'insert,update', '--ops', '2000',
                                  '--value-size', '4', '--distribution', 'hotspot:0.1:0.9'],
                                 tarantool)
    assert rc == 0, err
    assert res['manifest']['distribution'] == 'hotspot:0.1:0.9'
    firsts = u"""local out = {} for _, t in box.space[...]:pairs() do
                 out[#out + 1] = {t[1], t[2]:sub(1, 1)} end return out"""
    rows = lua(tarantool, firsts, space)
    # an update writes key k the value of k + 1 (buffered.py): its first character moves
    printable = string.printable
    updated = set(k for k, c in rows if c != printable[k % 100])
    hot = len([k for k in updated if k < 200]) / 200.0
    cold = len([k for k in updated if k >= 200]) / 1800.0
    assert hot > 0.95 and cold < 0.2, (hot, cold)
