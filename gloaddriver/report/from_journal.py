"""``gloaddriver report JOURNAL``: the result of a run rebuilt from its journal
(measure.rebuild), as the run would have ended it: the table on stdout, and the files
asked for. A run that was cut short is said so, with where, in the table's ABORTED
line and in the result's ``aborted``."""
from __future__ import absolute_import, division, print_function

from gloaddriver import converters
from gloaddriver.measure import rebuild


def main(argv):
    from gloaddriver.report import output
    ap = converters.WholeFlagsParser(
        prog='gloaddriver report',
        description="rebuild a run's result from its --journal, up to the last interval "
                    'written (a run that was killed: marked as cut short, and where)')
    ap.add_argument('journal')
    ap.add_argument('--json', default=None, metavar='FILE', help='write the result here')
    ap.add_argument('--html', default=None, metavar='FILE',
                    help='write an HTML report of the result here')
    ap.add_argument('--csv', default=None, metavar='PREFIX',
                    help='write the result as PREFIX_stats/history/failures.csv')
    args = ap.parse_args(argv)
    result = rebuild.rebuild(args.journal)
    failed = output.write(result, args.json, args.html, csv_prefix=args.csv)
    return 1 if failed else 0
