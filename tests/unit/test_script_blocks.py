"""Which commands of a script run as one written function (script_run's straight runs):
all of a script without jumps; with \\if, the commands between a jump and the next, a
command a jump lands on starting a run of its own."""
from __future__ import absolute_import, division, print_function

from gloaddriver.backends.postgres import script_run
from gloaddriver.workload.script import builtin, parse_text


def runs(text):
    return script_run._straight_runs(parse_text(text, 't.sql', 't', 1).commands)


def test_a_script_without_jumps_is_one_run():
    for name in ('tpcb-like', 'simple-update', 'select-only'):
        commands = builtin(name).commands
        assert script_run._straight_runs(commands) == [(0, len(commands))]


def test_jumps_cut_runs_and_their_targets_start_one():
    text = (u'\\set a 1\n'                 # 0
            u'\\if :a = 1\n'               # 1 branch -> 4
            u'\\set b 1\n'                 # 2
            u'\\elif :a = 2\n'             # 3 goto -> 8, 4 branch -> 7
            u'\\set b 2\n'                 # 5
            u'\\else\n'                    # 6 goto -> 8
            u'\\set b 3\n'                 # 7
            u'\\endif\n'
            u'\\set c :b\n'                # 8
            u'SELECT :c;\n')               # 9
    commands = parse_text(text, 't.sql', 't', 1).commands
    assert [c.kind for c in commands] == ['set', 'branch', 'set', 'goto', 'branch', 'set',
                                          'goto', 'set', 'set', 'sql']
    assert [(c.kind, c.jump) for c in commands if c.kind in ('branch', 'goto')] == [
        ('branch', 4), ('goto', 8), ('branch', 7), ('goto', 8)]
    assert runs(text) == [(0, 1), (2, 3), (5, 6), (7, 8), (8, 10)]
